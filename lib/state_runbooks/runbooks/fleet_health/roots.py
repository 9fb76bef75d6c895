"""Where the fleet is: the roots given (one folder, a list, or a file of paths, one a line) and
every folder under them that is a checkpoint or looks like a broken one
(:func:`state_runbooks.core.discovery.discover`, one listing per folder, by prefix on an object
store)."""
from __future__ import annotations

from dataclasses import dataclass

import yaml

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.discovery import DEFAULT_MAX_DEPTH, discover
from state_runbooks.core.fs import open_fs


@dataclass(frozen=True)
class Folder:
    """A folder found under a root: a checkpoint (``lacks`` empty) or a broken look-alike."""
    root: str  # the root it was found under, as opened
    path: str  # the folder's full path
    lacks: str = ""

    @property
    def whole(self) -> bool:
        return not self.lacks


def _as_list(given) -> list[str]:
    if isinstance(given, (list, tuple)):
        return [str(g).strip() for g in given if str(g).strip()]
    text = str(given or "").strip()
    if text.startswith("["):
        parsed = yaml.safe_load(text)
        if isinstance(parsed, list):
            return _as_list(parsed)
    return [p.strip() for p in text.replace("\n", ",").split(",") if p.strip()]


def paths_in_file(text: str) -> list[str]:
    """The paths of a file of paths: one a line; blank lines and ``#`` comments skipped."""
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def roots_of(spark, given) -> list:
    """The roots given, each opened (a :class:`CheckpointFS`): a folder, a comma- or line-separated
    list (or a list), or a file whose lines are paths. One line for a root that is not there."""
    roots = []
    for path in _as_list(given):
        fs = open_fs(spark, path)
        if fs.is_dir():
            roots.append(fs)
        elif fs.exists():
            roots += [open_fs(spark, p) for p in paths_in_file(fs.read_text(""))]
        else:
            raise RunbookError(f"{fs.root} does not exist: give the folder that holds your "
                               "checkpoints, a list of them, or a file of paths (one a line)")
    if not roots:
        raise RunbookError("checkpoint_path is empty: give the folder that holds your checkpoints")
    return roots


def find_checkpoints(roots: list, max_depth: int = DEFAULT_MAX_DEPTH,
                     include: list[str] | None = None, exclude: list[str] | None = None
                     ) -> list[Folder]:
    """Every checkpoint and broken look-alike under the roots, once each, by path; one line when
    there is none."""
    found: dict[str, Folder] = {}
    for fs in roots:
        for f in discover(fs, max_depth, include, exclude):
            path = f"{fs.root.rstrip('/')}/{f.path}" if f.path else fs.root
            found.setdefault(path, Folder(fs.root, path, f.lacks))
    if not found:
        where = ", ".join(fs.root for fs in roots)
        raise RunbookError(f"no checkpoint under {where} (down to {max_depth} levels"
                           + (", with the include/exclude globs given" if include or exclude
                              else "") + "): a checkpoint is a folder holding offsets/ and a "
                           "metadata file or commits/")
    return [found[p] for p in sorted(found)]
