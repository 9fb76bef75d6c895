"""Why a checkpoint path cannot be opened, each cause as one actionable line (pure functions).

Three causes that Spark and Hadoop report in raw Java text, or not at all:

- a file system whose connector is not on the classpath. Hadoop raises a
  ``ClassNotFoundException`` for the class a scheme is mapped to (``s3a``, ``gs``, ``abfs``,
  ``abfss``, ``wasb``, ``adl``...), or ``UnsupportedFileSystemException: No FileSystem for scheme``
  for a scheme it does not know (``s3``, ``oss``, ``dbfs``...): :func:`missing_connector`.
- a folder the user Spark runs as may not read: :func:`permission_message`.
- a path Spark's ``statestore`` and ``state-metadata`` readers cannot resolve. They qualify the
  ``path`` option into a URI string (``Path.makeQualified(...).toUri.toString``: a space becomes
  ``%20``) and build their own paths from that string with ``new Path(String)``, which does not
  decode it: the reader looks for a folder literally named ``sp%20ace`` and finds no committed
  batch. Every character ``java.net.URI`` quotes in a path is affected (:func:`quoted_characters`),
  whatever form of the path is passed, since quoting a character never yields it back.
"""
from __future__ import annotations

import re
import unicodedata

# Characters java.net.URI leaves as they are in a path: unreserved, punct, "/" and "@".
_URI_PATH_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                           "_-!.~'()*" ",;:$&+=" "/@")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")

_AWS = "hadoop-aws-{v}.jar with the AWS SDK bundle it was built with"
_AWS_PACKAGE = "spark.jars.packages=org.apache.hadoop:hadoop-aws:{v} brings both"
# scheme -> what to add to the cluster; {v} is Hadoop's version when known.
CONNECTORS: dict[str, str] = {
    "s3a": f"add {_AWS} ({_AWS_PACKAGE})",
    "s3": ("Hadoop has no s3:// file system (EMR's and Databricks' own aside): use s3a:// with "
           f"{_AWS} ({_AWS_PACKAGE}), or map s3 to it with "
           "spark.hadoop.fs.s3.impl=org.apache.hadoop.fs.s3a.S3AFileSystem"),
    "s3n": (f"s3n:// was removed in Hadoop 3: use s3a:// with {_AWS} ({_AWS_PACKAGE})"),
    "gs": ("add Google's GCS connector, gcs-connector-hadoop3-<version>-shaded.jar "
           "(com.google.cloud.bigdataoss:gcs-connector)"),
    "abfs": "add hadoop-azure-{v}.jar (spark.jars.packages=org.apache.hadoop:hadoop-azure:{v})",
    "adl": ("add hadoop-azure-datalake-{v}.jar "
            "(spark.jars.packages=org.apache.hadoop:hadoop-azure-datalake:{v})"),
    "oss": "add hadoop-aliyun-{v}.jar (spark.jars.packages=org.apache.hadoop:hadoop-aliyun:{v})",
    "obs": "add hadoop-huaweicloud-{v}.jar (org.apache.hadoop:hadoop-huaweicloud:{v})",
    "cosn": "add hadoop-cos-{v}.jar (org.apache.hadoop:hadoop-cos:{v})",
    "cos": "add IBM's Stocator connector (com.ibm.stocator:stocator)",
    "hdfs": "add hadoop-hdfs-client-{v}.jar (org.apache.hadoop:hadoop-hdfs-client:{v})",
    "o3fs": "add Apache Ozone's ozone-filesystem-hadoop3 jar (org.apache.ozone)",
    "dbfs": ("dbfs:/ exists only on Databricks: run this on a Databricks cluster, or copy the "
             "checkpoint to a path this Spark reaches"),
}
for _alias, _same in {"abfss": "abfs", "wasb": "abfs", "wasbs": "abfs", "webhdfs": "hdfs",
                      "swebhdfs": "hdfs", "viewfs": "hdfs", "ofs": "o3fs"}.items():
    CONNECTORS[_alias] = CONNECTORS[_same]

_MISSING_CLASS = re.compile(r"ClassNotFoundException: Class (\S+) not found")
_NO_SCHEME = re.compile(r"No FileSystem for scheme:? \"?([A-Za-z0-9+.-]+)\"?")
_PERMISSION = re.compile(r"AccessDeniedException|AccessControlException|Permission denied|"
                         r"\bAccessDenied\b|\b403 Forbidden\b|This request is not authorized")


def scheme_of(path: str) -> str | None:
    """The URI scheme of a path (``s3a``), lower-cased; None for a plain local path."""
    match = _SCHEME.match(path)
    if not match or re.match(r"^[A-Za-z]:[\\/]", path):  # C:\x is a Windows drive, not a scheme
        return None
    return match.group(1).lower()


def missing_connector(path: str, java_text: str, hadoop_version: str | None = None) -> str | None:
    """One line saying which connector to add when ``java_text`` (a Java error raised opening
    ``path``) says Hadoop has no file system for its scheme; None for any other error."""
    missing_class = _MISSING_CLASS.search(java_text)
    no_scheme = _NO_SCHEME.search(java_text)
    if missing_class is None and no_scheme is None:
        return None
    scheme = (no_scheme.group(1) if no_scheme else scheme_of(path)) or "file"
    if missing_class is not None and not missing_class.group(1).startswith("org.apache.hadoop.fs") \
            and scheme not in CONNECTORS and "FileSystem" not in missing_class.group(1):
        return None  # some other class: not a file system's
    what = f"class {missing_class.group(1)} not found" if missing_class else "no class for it"
    hint = CONNECTORS.get(scheme.lower(), "add its connector jar to the cluster (spark.jars or "
                                          "spark.jars.packages)")
    version = hadoop_version or "<hadoop version>"
    return (f"cannot open {path}: this Spark has no Hadoop file system for scheme '{scheme}' "
            f"({what}): {hint.format(v=version)}")


def is_permission_error(java_text: str) -> bool:
    """Whether a Java error says access was denied (local, HDFS or object store wording)."""
    return bool(_PERMISSION.search(java_text))


def permission_message(path: str, user: str | None, jvm_user: str | None = None) -> str:
    """The one line for a folder or file the user Spark runs as may not read."""
    if user is None:
        who = "the user the Spark Connect server runs as"
    elif jvm_user and jvm_user != user:
        who = f"user '{user}' (Hadoop's current user; the JVM runs as '{jvm_user}')"
    else:
        who = f"user '{user}'"
    return (f"permission denied: {who} cannot read {path}: grant it read and execute on the "
            "checkpoint folder and everything below (chmod -R u+rX, an ACL, or the bucket's "
            "access policy), or run Spark as a user who has them")


def quoted_characters(path: str) -> list[str]:
    """The characters of ``path`` that ``java.net.URI`` quotes in a path, in order of first
    appearance: ASCII outside unreserved/punct/``/``/``@`` (space ``%`` ``#`` ``?`` ``[`` ``]``
    ``{`` ``}`` ``\\`` ``"`` ``<`` ``>`` ``^`` `````` ``|``), control characters, and non-ASCII
    space or control characters. Other non-ASCII letters pass unquoted."""
    found: list[str] = []
    for char in path:
        if ord(char) < 128:
            quoted = char not in _URI_PATH_SAFE
        else:
            quoted = unicodedata.category(char) in ("Zs", "Zl", "Zp", "Cc")
        if quoted and char not in found:
            found.append(char)
    return found


def describe_char(char: str) -> str:
    """A character as a message names it: ``' ' (space)``, ``'#'``, ``U+00A0``."""
    names = {" ": "' ' (a space)", "\t": "a tab", "\n": "a newline"}
    if char in names:
        return names[char]
    if char.isprintable() and not char.isspace():
        return repr(char)
    return f"U+{ord(char):04X}"


def unreadable_path_message(root: str, chars: list[str], why: str = "") -> str:
    """The one line refusing a checkpoint whose path Spark's state readers cannot resolve."""
    names = ", ".join(describe_char(c) for c in chars)
    return (f"Spark's state readers cannot read a checkpoint whose path holds {names}: they "
            f"look for the URL-encoded name instead ({root}){why}; copy or symlink the checkpoint "
            "to a path without such characters and pass that path")
