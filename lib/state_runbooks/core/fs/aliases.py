"""The form of a checkpoint root that Spark's ``statestore`` and ``state-metadata`` readers resolve.

Those readers turn the ``path`` option into a URI string and build their paths from that string
without decoding it (see :mod:`~state_runbooks.core.fs.causes`): below a folder named ``sp ace``
they look into ``sp%20ace``. No spelling of such a path survives, so a local checkpoint is given to
them through an alias: a symbolic link with a plain name, in a private temporary folder, to the
checkpoint folder. Only where Spark's tasks run on this machine (a ``local[N]`` session, or a
Spark Connect server that reads the alias back as the checkpoint): anywhere else, and on other
file systems, the checkpoint is refused in one line naming the characters and the workaround.
The links are removed when the process exits; they point at the checkpoint, never copy it.
"""
from __future__ import annotations

import atexit
import os
import tempfile

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import MASTER_CONF
from state_runbooks.session.spark_session import is_connect

from .causes import quoted_characters, scheme_of, unreadable_path_message

_ALIASES: dict[str, str] = {}  # checkpoint root -> alias URI, for this process
_FOLDERS: list[str] = []


def _path_part(root: str) -> str:
    """The path of a URI (``file:/x`` -> ``/x``, ``s3a://b/x`` -> ``/x``)."""
    scheme = scheme_of(root)
    rest = root[len(scheme) + 1:] if scheme else root
    if rest.startswith("//"):
        rest = "/" + rest[2:].partition("/")[2]
    return rest


def state_reader_root(spark, fs) -> str:
    """The root to pass to Spark's state readers for the checkpoint ``fs`` is rooted at: the root
    itself, or an alias of it; RunbookError when neither can serve."""
    root = fs.root
    chars = quoted_characters(_path_part(root))
    if not chars:
        return root
    if root in _ALIASES:
        return _ALIASES[root]
    local = _path_part(root)
    if scheme_of(root) not in (None, "file") or not os.path.isdir(local):
        raise RunbookError(unreadable_path_message(root, chars))
    connect = is_connect(spark)
    master = str(spark.conf.get(MASTER_CONF, "") if connect else spark.sparkContext.master)
    if not master.startswith("local"):
        raise RunbookError(unreadable_path_message(
            root, chars, f"; Spark runs on {master}, not this machine alone, so no alias serves"))
    alias = _new_alias(local)
    if connect and not _server_reads_alias(spark, fs, alias):
        raise RunbookError(unreadable_path_message(
            root, chars, "; the Spark Connect server does not see this machine's files"))
    _ALIASES[root] = alias
    return alias


def _new_alias(local: str) -> str:
    folder = tempfile.mkdtemp(prefix="state-runbooks-alias-")
    if quoted_characters(folder):  # TMPDIR itself is oddly named
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="state-runbooks-alias-", dir="/tmp")
    if not _FOLDERS:
        atexit.register(_remove_aliases)
    _FOLDERS.append(folder)
    link = os.path.join(folder, "checkpoint")
    os.symlink(local, link, target_is_directory=True)
    return "file:" + link


def _server_reads_alias(spark, fs, alias: str) -> bool:
    """Whether the Connect server reads the same ``metadata`` file through the alias."""
    try:
        expected = fs.read_text("metadata").strip()
        rows = spark.read.text(alias + "/metadata").collect()
        return "\n".join(r.value for r in rows).strip() == expected
    except Exception:  # noqa: BLE001 - the server does not see it, whatever the error
        return False


def _remove_aliases() -> None:
    """Remove the links and their folders (never what a link points to)."""
    for folder in _FOLDERS:
        link = os.path.join(folder, "checkpoint")
        if os.path.islink(link):
            os.unlink(link)
        try:
            os.rmdir(folder)  # empty once the link is gone: nothing is ever followed
        except OSError:
            pass
    _FOLDERS.clear()
    _ALIASES.clear()
