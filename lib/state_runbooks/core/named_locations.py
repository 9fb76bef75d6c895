"""The places a checkpoint names a location by its absolute path, and those paths moved to where
the checkpoint now is.

A checkpoint is mostly relative to its own root, with one exception seen on Spark 4.3: the operator
metadata of format 2 (``state/<op>/_metadata/v2/<batch>``, written by ``transformWithState``)
lists each store's schema files by absolute URI (``stateSchemaFilePaths``), and a restart reads
them from there. A copy of such a checkpoint (another bucket, folder or workspace) still reads its
schema files from the original; once the original is gone it fails with ``File
file:/old/state/0/_stateSchema/default/0_<uuid> does not exist`` (tests/spark/test_named_locations.py
shows both). The seen-files log of a file source names its input files by absolute path too, but
those are the input's, not the checkpoint's: they move only when the input moves.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError

STATE_MARK = "/state/"  # where a path Spark wrote stops naming the root and starts naming the file
SCHEMA_PATHS = "stateSchemaFilePaths"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class NamedLocation:
    """An absolute path written into a file of the checkpoint."""
    file: str  # the file that names it, relative to the root
    path: str  # as Spark wrote it
    inside: bool  # under this checkpoint's root

    @property
    def relative(self) -> str | None:
        """The path below the root it names (``state/0/_stateSchema/...``), None if it names
        no file of a checkpoint's ``state/``."""
        at = self.path.find(STATE_MARK)
        return self.path[at + 1:] if at >= 0 else None

    @property
    def checkpoint(self) -> str:
        """The checkpoint root it names: the path up to its ``state/`` (all of it, without one)."""
        at = self.path.find(STATE_MARK)
        return self.path[:at] if at >= 0 else self.path


def _spelled_alike(uri: str) -> str:
    """``file:///x`` and ``file:/x`` are one place; a root given without a scheme (a Spark
    Connect root before the server named it) is compared by its path alone."""
    return re.sub(r"^file:///", "file:/", uri)


def _same_root(path: str, root: str) -> bool:
    path, root = _spelled_alike(path), _spelled_alike(root).rstrip("/")
    if not _SCHEME.match(root):
        path = _SCHEME.sub("", path)
    return path.startswith(root + "/")


def metadata_v2_files(fs) -> list[str]:
    """Every operator metadata file of format 2 under ``state/``, by path from the root."""
    if not fs.is_dir("state"):
        return []
    found = []
    for op in (e for e in fs.list("state") if e.is_dir and e.name.isdigit()):
        folder = f"state/{op.name}/_metadata/v2"
        if fs.is_dir(folder):
            found += [f"{folder}/{e.name}" for e in fs.list(folder) if e.name.isdigit()]
    return sorted(found)


def _schema_paths(text: str, where: str) -> list[str]:
    lines = text.split("\n")
    try:
        meta = json.loads(lines[1]) if len(lines) > 1 else {}
    except json.JSONDecodeError:
        raise RunbookError(f"{where} is not operator metadata Spark wrote (its second line is "
                           "not JSON): leave it as it is and run 05 on this checkpoint") from None
    return [p for info in meta.get("stateStoreInfo") or [] for p in info.get(SCHEMA_PATHS) or []]


def named_locations(fs) -> list[NamedLocation]:
    """Every absolute path the checkpoint at ``fs``'s root names for its own files."""
    files = metadata_v2_files(fs)  # listed first: a Connect root is named by its listing
    root = fs.root
    return [NamedLocation(rel, path, _same_root(path, root))
            for rel in files
            for path in _schema_paths(fs.read_text(rel), rel)]


def elsewhere(fs) -> list[NamedLocation]:
    """The paths that name another location: the checkpoint was copied, and restarts only while
    that location holds the files."""
    return [named for named in named_locations(fs) if not named.inside]


def relocated(text: str, where: str, new_root: str) -> str:
    """An operator metadata file's text with every schema file path that names another location
    naming the same file under ``new_root``, each path's JSON string replaced where it stands so
    that the rest keeps Spark's bytes."""
    def moved(path: str) -> str:
        if _same_root(path, new_root):
            return path
        relative = NamedLocation(where, path, False).relative
        if relative is None:
            raise RunbookError(f"{where} names {path}, which is no file of a checkpoint's state/: "
                               "these runbooks do not know where it goes; nothing was changed")
        return f"{new_root.rstrip('/')}/{relative}"

    paths = _schema_paths(text, where)
    out = text
    for path in paths:
        out = out.replace(json.dumps(path, ensure_ascii=False),
                          json.dumps(moved(path), ensure_ascii=False))
    if _schema_paths(out, where) != [moved(p) for p in paths]:
        raise RunbookError(f"{where}: its schema file paths could not be rewritten one by one "
                           "(one path holds another): nothing was changed")
    return out
