"""The form of a checkpoint root that Spark's ``statestore`` and ``state-metadata`` readers resolve.

Those readers turn the ``path`` option into a URI string and build their paths from that string
without decoding it (see :mod:`~state_runbooks.core.fs.causes`): below a folder named ``sp ace``
they look into ``sp%20ace``. No spelling of such a path survives, so a local checkpoint is given to
them through an alias: a symbolic link with a plain name, in a private temporary folder, to the
checkpoint folder. Only where Spark's tasks run on this machine (a ``local[N]`` session, or a
Spark Connect server that reads the alias back as the checkpoint): anywhere else, and on other
file systems, the checkpoint is refused in one line naming the characters and the workaround.
The links are removed when the process exits; they point at the checkpoint, never copy it. The
same checks and private folders of links serve the view of one state partition
(:mod:`.partition_view`).
"""
from __future__ import annotations

import atexit
import contextlib
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
    local = local_folder(root)
    if local is None:
        raise RunbookError(unreadable_path_message(root, chars))
    elsewhere = tasks_elsewhere(spark)
    if elsewhere:
        raise RunbookError(unreadable_path_message(root, chars,
                                                   f"; {elsewhere}, so no alias serves"))
    alias = _new_alias(local)
    if is_connect(spark) and not server_reads_alias(spark, fs, alias):
        raise RunbookError(unreadable_path_message(
            root, chars, "; the Spark Connect server does not see this machine's files"))
    _ALIASES[root] = alias
    return alias


def local_folder(root: str) -> str | None:
    """The folder on this machine a checkpoint root names, or None (another file system)."""
    local = _path_part(root)
    return local if scheme_of(root) in (None, "file") and os.path.isdir(local) else None


def tasks_elsewhere(spark) -> str | None:
    """Why Spark's tasks may not run on this machine (a cluster), or None (``local[N]``; over
    Spark Connect a local server, which :func:`server_reads_alias` confirms)."""
    connect = is_connect(spark)
    master = str(spark.conf.get(MASTER_CONF, "") if connect else spark.sparkContext.master)
    return None if master.startswith("local") else f"Spark runs on {master}, not this machine alone"


def private_folder(prefix: str, parent: str | None = None) -> str:
    """A new private temporary folder with a plain name, for links, in ``parent`` (default: the
    temporary folder); removed at exit if left."""
    folder = tempfile.mkdtemp(prefix=prefix, dir=parent)
    if quoted_characters(folder):  # TMPDIR itself is oddly named
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    if not _FOLDERS:
        atexit.register(_remove_aliases)
    _FOLDERS.append(folder)
    return folder


def remove_links(folder: str) -> None:
    """Remove a folder of links and the folders made for them, bottom up: links are unlinked,
    never followed, and a folder that holds anything else is left."""
    for here, dirs, files in os.walk(folder, topdown=False):
        for name in files + dirs:
            path = os.path.join(here, name)
            if os.path.islink(path):
                os.unlink(path)
            elif os.path.isdir(path):
                with contextlib.suppress(OSError):
                    os.rmdir(path)
    with contextlib.suppress(OSError):
        os.rmdir(folder)
    if folder in _FOLDERS:
        _FOLDERS.remove(folder)


def _new_alias(local: str) -> str:
    folder = private_folder("state-runbooks-alias-")
    link = os.path.join(folder, "checkpoint")
    os.symlink(local, link, target_is_directory=True)
    return "file:" + link


def server_reads_alias(spark, fs, alias: str) -> bool:
    """Whether the Connect server reads the same ``metadata`` file through the alias."""
    try:
        expected = fs.read_text("metadata").strip()
        rows = spark.read.text(alias + "/metadata").collect()
        return "\n".join(r.value for r in rows).strip() == expected
    except Exception:  # noqa: BLE001 - the server does not see it, whatever the error
        return False


def _remove_aliases() -> None:
    """Remove the links and their folders (never what a link points to)."""
    for folder in list(_FOLDERS):
        remove_links(folder)
    _FOLDERS.clear()
    _ALIASES.clear()
