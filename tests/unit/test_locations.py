"""Where runbooks read and write: a relative path means the folder a command runs from, and
nothing is written inside the runbooks' own files (the package, the checkout's folders)."""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.locations import PACKAGE, own_folders, refuse_own_folder
from state_runbooks.running.parameters import (
    check_written_paths,
    is_path_parameter,
    resolve_relative_paths,
)


def test_path_parameters_are_named_by_their_ending():
    assert all(is_path_parameter(n) for n in ("checkpoint_path", "backup_dir", "query_file",
                                              "event_log_path", "scratch_dir", "journal_path"))
    assert not any(is_path_parameter(n) for n in ("fail_on", "mode", "dry_run", "store_name"))


def test_relative_paths_are_made_absolute_against_the_folder_run_from():
    given = {"checkpoint_path": "ck/agg", "summary_path": "../out/s.json", "query_file": "/abs.py",
             "output_path": "s3a://bucket/new", "backup_dir": "", "mode": "rewrite",
             "journal_path": "<a placeholder>", "scratch_dir": "file:/tmp/x"}
    resolved = resolve_relative_paths(given, "/home/me/work")
    assert resolved == {**given, "checkpoint_path": "/home/me/work/ck/agg",
                        "summary_path": "/home/me/out/s.json"}


def test_nothing_is_written_inside_the_runbooks_own_files(tmp_path):
    folders = own_folders()
    assert PACKAGE in folders and any(f.name == "notebooks" for f in folders)  # a checkout
    notebooks = next(f for f in folders if f.name == "notebooks")
    for path in (str(PACKAGE / "bundle" / "x.json"), f"file:{notebooks}/ck",
                 str(notebooks / "sub" / "summary.json")):
        with pytest.raises(RunbookError) as refused:
            refuse_own_folder(path, "output_path")
        assert str(refused.value).startswith(f"output_path={path} is inside ")
        assert "\n" not in str(refused.value)
    refuse_own_folder(str(tmp_path / "ck"), "output_path")  # elsewhere: fine
    refuse_own_folder("s3a://bucket/notebooks/x", "output_path")  # another file system
    with pytest.raises(RunbookError, match="^summary_path="):
        check_written_paths({"summary_path": str(notebooks / "s.json"),
                             "checkpoint_path": str(notebooks)})  # reading there is fine
