"""Demo folders: orphans of exited processes are removed, and nothing else."""
from __future__ import annotations

import os
import subprocess
import sys

from state_runbooks.demos.checkpoints import (
    DEMO_FOLDER_MARKER,
    DEMO_FOLDER_PREFIX,
    remove_orphaned_demo_folders,
)


# -- demo folders: removed with the process that made them, never anything else ---------------------
def _demo_folder(parent, name, pid=None):
    folder = parent / name
    folder.mkdir()
    if pid is not None:
        (folder / DEMO_FOLDER_MARKER).write_text(f"{pid}\n")
    return folder


def test_orphaned_demo_folders_are_removed_and_nothing_else(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    dead_pid = int(ended.stdout)
    orphan = _demo_folder(tmp_path, f"{DEMO_FOLDER_PREFIX}orphan", dead_pid)
    in_use = _demo_folder(tmp_path, f"{DEMO_FOLDER_PREFIX}in-use", os.getpid())
    unmarked = _demo_folder(tmp_path, f"{DEMO_FOLDER_PREFIX}unmarked")
    other = _demo_folder(tmp_path, "someone-elses", dead_pid)
    assert remove_orphaned_demo_folders(str(tmp_path)) == [str(orphan)]
    assert not orphan.exists() and in_use.exists() and unmarked.exists() and other.exists()


def test_a_demo_folder_goes_when_its_process_exits(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    made = subprocess.run([sys.executable, "-c", "from state_runbooks.demos.checkpoints import new_demo_path; "
                           "print(new_demo_path('dedup'))"],
                          capture_output=True, text=True, check=True, env=env).stdout.strip()
    assert made.startswith(str(tmp_path / DEMO_FOLDER_PREFIX)) and made.endswith("/dedup")
    assert list(tmp_path.iterdir()) == []
