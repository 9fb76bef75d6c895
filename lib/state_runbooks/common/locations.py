"""Where a runbook may write: anywhere but inside its own files.

The installed package (its notebooks and playbooks included) and, in a checkout, the folders the
repository tracks (``lib/``, ``notebooks/``, ``runbooks/``, ``tests/``) are never written to: a
summary, a backup, a scratch copy or a new checkpoint there would end up in a wheel or a commit,
or inside an installation. A relative path is resolved before it gets here: against the folder a
command was run from (``state-runbooks run``), or the notebook's folder in Jupyter.
"""
from __future__ import annotations

import pathlib
import re

from .errors import RunbookError

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
PACKAGE = pathlib.Path(__file__).resolve().parents[1]
CHECKOUT_FOLDERS = ("lib", "notebooks", "runbooks", "tests")


def local_path(path: str) -> pathlib.Path | None:
    """The local path a path or ``file:`` URI names (absolute), None for another file system."""
    text = str(path).strip()
    if _SCHEME.match(text) and not text.startswith("file:"):
        return None
    text = re.sub(r"^file:(//)?(?=/)", "", text)
    return pathlib.Path(text).expanduser().resolve()


def own_folders() -> list[pathlib.Path]:
    """The package's folder and, where it is installed from a checkout, the checkout's tracked
    folders."""
    folders = [PACKAGE]
    for parent in PACKAGE.parents:
        if (parent / "pyproject.toml").exists() and (parent / "notebooks").is_dir():
            folders += [parent / name for name in CHECKOUT_FOLDERS]
            break
    return folders


def refuse_own_folder(path: str, what: str = "") -> None:
    """A one-line RunbookError when ``path`` is inside the runbooks' own files."""
    local = local_path(path) if path else None
    if local is None:
        return
    for folder in own_folders():
        if local == folder or folder in local.parents:
            name = f"{what}={path}" if what else str(path)
            raise RunbookError(f"{name} is inside {folder}, the runbooks' own files: nothing is "
                               "written there; pass a folder of your own (a relative path means "
                               "the folder you run from, or the notebook's folder in Jupyter)")
