"""The file system held in memory behaves as Hadoop's does where the safety layer relies on it:
listings, moves (renames that keep times), copies and writes (never over a file unless asked),
folders that stay, the clock, and a session's helpers given the files instead of a session."""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.fs import copy_tree, open_fs, remove_tree, tree_checksums
from state_runbooks.core.fs.memory import MemoryFiles, MemoryFS


@pytest.fixture
def files():
    return MemoryFiles(now_ms=1_000)


def test_listing_walk_and_reads(files):
    fs = files.open("/c/q/")
    fs.write_bytes("offsets/0", b"v1")
    fs.write_bytes("state/0/0/1.delta", b"abc")
    assert fs.root == "mem:/c/q" and fs.uri("offsets/0") == "mem:/c/q/offsets/0"
    assert [(e.name, e.is_dir) for e in fs.list()] == [("offsets", True), ("state", True)]
    assert [(e.name, e.size) for e in fs.list("state/0/0")] == [("1.delta", 3)]
    assert list(fs.walk()) == ["offsets/0", "state/0/0/1.delta"]
    assert list(fs.walk("state")) == ["state/0/0/1.delta"]
    assert fs.list("absent") == [] and fs.walk("absent") == {}
    assert fs.exists("state/0") and fs.is_dir("state/0") and not fs.is_dir("offsets/0")
    assert fs.read_text("offsets/0") == "v1" and len(fs.sha256("offsets/0")) == 64
    assert fs.raw() is fs and fs.verify_checksums(["offsets/0"]) == {}


def test_times_follow_the_clock(files):
    fs = files.open("mem:/c")
    fs.write_bytes("a", b"1")
    files.advance(5_000)
    fs.write_bytes("b", b"2")
    times = {rel: e.modified_ms for rel, e in fs.walk().items()}
    assert times["b"] - times["a"] > 5_000
    fs.write_bytes("a", b"3", overwrite=True)
    assert fs.walk()["a"].modified_ms > times["b"]


def test_moves_rename_and_keep_times_folders_stay(files):
    fs, backup = files.open("mem:/c"), files.open("mem:/c.backup")
    fs.write_bytes("offsets/3", b"x")
    then = fs.walk()["offsets/3"]
    fs.move_to("offsets/3", backup, "moved/offsets/3")
    assert not fs.exists("offsets/3") and fs.is_dir("offsets") and fs.list("offsets") == []
    assert backup.walk()["moved/offsets/3"].modified_ms == then.modified_ms
    fs.write_bytes("state/0/1.delta", b"s")
    fs.move_to("state", backup, "moved/state")
    assert backup.read_bytes("moved/state/0/1.delta") == b"s" and not fs.exists("state")


def test_nothing_is_written_over(files):
    fs = files.open("mem:/c")
    fs.write_bytes("a", b"1")
    fs.write_bytes("b", b"2")
    with pytest.raises(RunbookError, match="exists"):
        fs.write_bytes("a", b"9")
    with pytest.raises(RunbookError, match="onto existing"):
        fs.copy_to("a", fs, "b")
    with pytest.raises(RunbookError, match="onto existing"):
        fs.move_to("a", fs, "b")
    with pytest.raises(RunbookError, match="not the same file system"):
        fs.move_to("a", MemoryFiles().open("mem:/c"), "a")
    assert fs.read_bytes("a") == b"1" and fs.read_bytes("b") == b"2"


def test_changes_are_reported_after_they_are_made(files):
    seen = []
    files.on_change = lambda op, uri: seen.append((op, uri, files.open(uri).exists()))
    fs = files.open("mem:/c")
    fs.write_bytes("a", b"1")
    fs.copy_to("a", fs, "b")
    fs.move_to("b", fs, "d/b")
    assert seen == [("write", "mem:/c/a", True), ("write", "mem:/c/b", True),
                    ("move", "mem:/c/d/b", True)]


def test_session_helpers_take_the_files_instead_of_a_session(files):
    fs = open_fs(files, "mem:/c")
    assert isinstance(fs, MemoryFS) and fs.same_file_system(open_fs(files, "/other"))
    fs.write_bytes("a", b"1")
    fs.write_bytes("d/b", b"2")
    copy = copy_tree(files, "mem:/c", "mem:/copy")
    assert copy == "mem:/copy" and tree_checksums(files, copy) == tree_checksums(files, "mem:/c")
    with pytest.raises(RunbookError, match="did not make it"):
        remove_tree(files, copy)
    open_fs(files, copy).mark_made("a test")
    assert remove_tree(files, copy) and not open_fs(files, copy).exists()
    assert open_fs(files, "mem:/c").exists("d/b")


def test_only_its_own_paths():
    with pytest.raises(RunbookError, match="memory file system"):
        MemoryFiles().open("file:/tmp/x")
