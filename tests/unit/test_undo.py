"""Undo (``safety/safekeeping.py``) on a checkpoint held in memory, with stand-in steps: no
Spark. An undo stopped midway resumes and finishes byte for byte; an active-looking checkpoint is
refused unless forced; a live writer during an undo stops it and what it moved goes back; files a
later writer changed without a backup are named."""
from __future__ import annotations

import pytest
from memory_checkpoints import HOUR_MS, below, commit_entry, offsets_entry, stopped_checkpoint
from stand_in_change import CHANGE, NewBatch, checks_of

from state_runbooks.common.errors import RunbookError
from state_runbooks.safety.change import apply_change, undo_change
from state_runbooks.safety.safekeeping import Outcome, files_to_keep, is_metadata_file

LAST_BATCH = ["commits/3", "offsets/3", "state/0/0/4.delta", "state/0/1/4.delta"]


def applied(verified: bool = True):
    """A checkpoint, its files before, and the outcome of a change that moved its last batch
    aside (with sidecars) and wrote a new batch 4 in its place."""
    ckpt = stopped_checkpoint()
    original = below(ckpt.spark, ckpt.root)
    out = apply_change(ckpt, NewBatch(ckpt, verified), checks_of(ckpt),
                       Outcome("apply", dry_run=False), moves=LAST_BATCH,
                       undo_when_not_verified=False)
    assert out.applied and out.verified is verified
    return ckpt, original, out


def crash_after(files, moves: int):
    """Fail the file system right after its ``moves``-th move from now (a lost connection)."""
    count = [0]

    def fail(op, uri):
        if op == "move":
            count[0] += 1
            if count[0] == moves:
                raise OSError("connection reset")
    files.on_change = fail


def test_the_change_moved_the_last_batch_with_its_sidecars():
    ckpt, original, out = applied()
    moved = {rel.removeprefix("moved/") for rel in ckpt.spark.open(out.backup_dir).walk("moved")}
    assert moved == set(LAST_BATCH) | {f"{r.rpartition('/')[0]}/.{r.rpartition('/')[2]}.crc"
                                       .lstrip("/") for r in LAST_BATCH}
    assert "moved 8 files (with sidecars)" in out.lines[-3]


@pytest.mark.parametrize("stop_after", [1, 5, 9, 13])
def test_an_interrupted_undo_resumes_and_finishes_byte_for_byte(stop_after):
    """13 moves: 5 files the change wrote go aside, then 8 moved files come back."""
    ckpt, original, out = applied()
    files = ckpt.spark
    crash_after(files, stop_after)
    with pytest.raises(RunbookError, match="undo stopped halfway: connection reset.*it resumes"):
        undo_change(ckpt, CHANGE, journal_path=out.journal_path, dry_run=False)
    files.on_change = None
    assert below(files, ckpt.root) != original
    resumed = undo_change(ckpt, CHANGE, journal_path=out.journal_path, dry_run=False)
    assert resumed.applied and resumed.verified, resumed.lines
    assert below(files, ckpt.root) == original


def test_an_undo_twice_interrupted_still_finishes():
    ckpt, original, out = applied()
    files = ckpt.spark
    for stop_after in (3, 4):
        crash_after(files, stop_after)
        with pytest.raises(RunbookError, match="undo stopped halfway"):
            undo_change(ckpt, CHANGE, dry_run=False)
    files.on_change = None
    assert undo_change(ckpt, CHANGE, dry_run=False).verified
    assert below(files, ckpt.root) == original


def test_an_undo_dry_run_moves_nothing():
    ckpt, _original, out = applied()
    files = ckpt.spark
    before = below(files, ckpt.root)
    planned = undo_change(ckpt, CHANGE, journal_path=out.backup_dir)
    assert below(files, ckpt.root) == before and not planned.applied
    assert "5 files written since then go aside, 8 moved files come back, 1 copied files are " \
           "restored from the copy" in planned.lines


def test_an_active_looking_checkpoint_refuses_undo_unless_forced():
    ckpt, original, out = applied()
    files = ckpt.spark
    # a restarted query wrote batch 5 just now: not the change's own writes
    ckpt.fs.write_bytes("offsets/5", offsets_entry(5))
    refused = undo_change(ckpt, CHANGE, dry_run=False)
    assert refused.refused.startswith("the query looks active: offsets/5 was written")
    assert not refused.applied
    forced = undo_change(ckpt, CHANGE, dry_run=False, force=True)
    assert forced.verified and below(files, ckpt.root) == original
    displaced = {rel.split("/displaced/", 1)[1] for rel in files.open(out.backup_dir).walk()
                 if "/displaced/" in rel}
    assert "offsets/5" in displaced  # aside, never deleted


def test_a_live_writer_during_the_undo_stops_it_and_its_moves_go_back():
    ckpt, _original, out = applied()
    files = ckpt.spark
    changed = below(files, ckpt.root)
    moves = [0]

    def writer(op, uri):
        if op == "move":
            moves[0] += 1
            if moves[0] == 2:
                files.on_change = None
                ckpt.fs.write_bytes("commits/5", commit_entry(5))
    files.on_change = writer
    stopped = undo_change(ckpt, CHANGE, dry_run=False)
    assert stopped.stopped == f"commits/5 appeared ({len(commit_entry(5))} bytes)"
    assert "put back, the same bytes" in stopped.refused
    now = below(files, ckpt.root)
    assert now.pop("commits/5") and now == changed


def test_files_changed_since_without_a_backup_refuse_undo_unless_forced():
    ckpt, _original, out = applied()
    ckpt.spark.advance(-HOUR_MS)  # long ago: no sign of a live query
    ckpt.fs.write_bytes("offsets/1", b"overwritten", overwrite=True)  # no backup of it
    refused = undo_change(ckpt, CHANGE, dry_run=False)
    assert refused.refused.startswith("1 files of the checkpoint as the stand-in change found it "
                                      "changed or vanished since and have no backup (e.g. "
                                      "offsets/1)")
    forced = undo_change(ckpt, CHANGE, dry_run=False, force=True)
    assert forced.applied and not forced.verified
    assert forced.lines[-1] == "NOT verified: the checkpoint differs from the journal's manifest"


def test_a_journal_of_another_checkpoint_is_refused():
    ckpt, _original, out = applied()
    other = stopped_checkpoint()
    other.spark.open(out.backup_dir).write_bytes("journal.json",
                                                 ckpt.spark.open(out.journal_path.rsplit("/", 1)[0])
                                                 .read_bytes("journal.json"))
    moved = other.spark.open("mem:/checkpoints/orders").move_to
    moved("", other.spark.open("mem:/checkpoints"), "orders-elsewhere")
    from state_runbooks.core.checkpoint import Checkpoint
    elsewhere = Checkpoint(other.spark, "mem:/checkpoints/orders-elsewhere")
    with pytest.raises(RunbookError, match="is for mem:/checkpoints/orders, not "
                                           "mem:/checkpoints/orders-elsewhere"):
        undo_change(elsewhere, CHANGE, journal_path=out.journal_path)


def test_what_a_change_backs_up():
    inventory = dict.fromkeys(["metadata", ".metadata.crc", "offsets/3", "offsets/.3.crc",
                               "sources/0/0", "state/0/_metadata/metadata",
                               "state/0/0/_metadata/schema", "state/0/0/4.delta", "commits/3"])
    moved, copies = files_to_keep(inventory, ["offsets/3", "commits/3", "offsets/9"])
    assert moved == ["offsets/3", "commits/3", "offsets/.3.crc"]
    assert copies == ["metadata", ".metadata.crc", "sources/0/0", "state/0/_metadata/metadata",
                      "state/0/0/_metadata/schema"]
    assert is_metadata_file("state/0/0/default/_metadata/schema")
    assert not is_metadata_file("state/0/0/4.delta") and not is_metadata_file("offsets/.3.crc")
