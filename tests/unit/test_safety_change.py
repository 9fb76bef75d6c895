"""The one change procedure (``safety/change.py``) with stand-in steps, on a checkpoint held in
memory: no Spark. A dry run writes nothing; logs that moved since the checks refuse; a live writer
stops the change and every file is put back; a change that is not verified is undone, byte for
byte."""
from __future__ import annotations

import sys

import pytest
from memory_checkpoints import below, commit_entry, offsets_entry, snapshot, stopped_checkpoint
from stand_in_change import CHANGE, NewBatch, checks_of

from state_runbooks.safety.change import apply_change, undo_change
from state_runbooks.safety.safekeeping import Outcome

@pytest.fixture
def ckpt():
    return stopped_checkpoint()


def test_no_spark_is_started(ckpt):
    """The procedure and its undo import no PySpark module and start no session (other tests in
    this worker process may have imported PySpark, or started one)."""
    def active_context():
        pyspark = sys.modules.get("pyspark")
        return pyspark and pyspark.SparkContext._active_spark_context

    before, context = set(sys.modules), active_context()
    out = apply_change(ckpt, NewBatch(ckpt), checks_of(ckpt), Outcome("apply", dry_run=False))
    undo_change(ckpt, CHANGE, out.journal_path, dry_run=False)
    assert not [m for m in set(sys.modules) - before if m.startswith(("pyspark", "py4j"))]
    assert active_context() is context  # none started (a Spark test's may run in this worker)


def test_a_dry_run_writes_nothing(ckpt):
    before, steps = snapshot(ckpt.spark), NewBatch(ckpt)
    out = apply_change(ckpt, steps, checks_of(ckpt), Outcome("apply", dry_run=True))
    assert snapshot(ckpt.spark) == before and not steps.called and not out.applied
    assert out.lines[-1].startswith("dry run: nothing changed. With dry_run=False this copies "
                                    "the checkpoint's metadata files")
    assert "then writes batch 4, and verifies it (undone on its own" in out.lines[-1]


def test_a_dry_run_says_it_would_be_refused(ckpt):
    before = snapshot(ckpt.spark)
    out = apply_change(ckpt, NewBatch(ckpt), checks_of(ckpt, ok=False),
                       Outcome("apply", dry_run=True))
    assert snapshot(ckpt.spark) == before
    assert out.lines[-1] == "and would be refused now: the query looks stopped; nothing was changed"


@pytest.mark.parametrize("since", ["a batch committed", "a commit went away"])
def test_logs_moved_since_the_checks_refuse(ckpt, since):
    checks = checks_of(ckpt)
    if since == "a batch committed":
        ckpt.fs.write_bytes("commits/4", commit_entry(4))
    else:
        ckpt.fs.move_to("commits/3", ckpt.spark.open("mem:/elsewhere"), "3")
    before, steps = snapshot(ckpt.spark), NewBatch(ckpt)
    out = apply_change(ckpt, steps, checks, Outcome("apply", dry_run=False))
    assert snapshot(ckpt.spark) == before and not steps.called and not out.applied
    assert out.refused.startswith("the query looks active: its offsets or commits changed since")
    assert ("commits/4 appeared" if since == "a batch committed" else "commits/3 went away") \
        in out.refused


def test_a_refusal_writes_nothing(ckpt):
    before = snapshot(ckpt.spark)
    out = apply_change(ckpt, NewBatch(ckpt), checks_of(ckpt, ok=False),
                       Outcome("apply", dry_run=False))
    assert snapshot(ckpt.spark) == before and out.lines == [f"refused: {out.refused}"]


def test_a_live_writer_before_the_change_stops_it(ckpt):
    """The writer commits a batch while the metadata files are being backed up: the whole
    checkpoint, listed again before the change, shows it; the change is not made."""
    files, steps = ckpt.spark, NewBatch(ckpt)
    original = below(files, ckpt.root)

    def writer(op, uri):
        if "/copy/" in uri and not ckpt.fs.exists("commits/4"):
            ckpt.fs.write_bytes("commits/4", commit_entry(4))
    files.on_change = writer
    out = apply_change(ckpt, steps, checks_of(ckpt), Outcome("apply", dry_run=False))
    assert not steps.called and not out.applied
    assert out.stopped == f"commits/4 appeared ({len(commit_entry(4))} bytes)"
    assert out.refused.startswith("stopped before the change at the first sign of a live writer")
    now = below(files, ckpt.root)
    assert now.pop("commits/4") and now == original


def test_a_live_writer_stops_the_moves_and_every_file_is_put_back(ckpt):
    """A rollback-like change moves the last batch aside; a writer commits a new batch after
    the first move: the change stops and every file moved comes back, the same bytes."""
    files, steps = ckpt.spark, NewBatch(ckpt)
    original = below(files, ckpt.root)
    moves = ["commits/3", "offsets/3", "state/0/0/4.delta", "state/0/1/4.delta"]

    def writer(op, uri):
        if op == "move" and "/moved/" in uri:
            files.on_change = None
            ckpt.fs.write_bytes("offsets/4", offsets_entry(4))
    files.on_change = writer
    out = apply_change(ckpt, steps, checks_of(ckpt), Outcome("apply", dry_run=False), moves=moves)
    assert not steps.called and not out.applied
    assert out.stopped == f"offsets/4 appeared ({len(offsets_entry(4))} bytes)"
    assert "moved so far were put back, the same bytes: nothing was changed" in out.refused
    now = below(files, ckpt.root)
    assert now.pop("offsets/4") and now == original
    backup = files.open(out.backup_dir)
    assert backup.walk("moved") == {}  # nothing left aside: everything went back
    journal = backup.read_text("journal.json")
    assert '"status": "stopped"' in journal and '"put_back": true' in journal


def test_a_verified_change_stays_and_its_journal_records_what_it_wrote(ckpt):
    out = apply_change(ckpt, NewBatch(ckpt), checks_of(ckpt), Outcome("apply", dry_run=False))
    assert out.applied and out.verified and not out.auto_undone
    assert ckpt.spark.open(ckpt.root).exists("commits/4")
    journal = ckpt.spark.open(out.backup_dir).read_text("journal.json")
    assert '"status": "applied"' in journal and '"commits/4": [' in journal
    assert set(out.seconds) == {"backup", "change", "verification"}


@pytest.mark.parametrize("failure", ["not verified", "the call failed"])
def test_an_unverified_change_undoes_itself_byte_for_byte(ckpt, failure):
    files = ckpt.spark
    original = below(files, ckpt.root)
    steps = NewBatch(ckpt, verified=False, fails="boom" if failure == "the call failed" else None)
    out = apply_change(ckpt, steps, checks_of(ckpt), Outcome("apply", dry_run=False))
    assert steps.called and out.applied and not out.verified and out.auto_undone
    assert below(files, ckpt.root) == original
    assert out.lines[-1].startswith("undone on its own: verified: every file of the checkpoint")
    if failure == "the call failed":
        assert "NOT verified: Spark's stand-in change failed: boom" in out.lines
    # what the change wrote is kept aside in the backup, never deleted
    displaced = [rel for rel in files.open(out.backup_dir).walk() if "/displaced/" in rel]
    assert sorted(rel.split("/displaced/", 1)[1] for rel in displaced) == [
        "commits/4", "offsets/4", "state/0/0/5.delta", "state/0/1/5.delta",
        "state/0/_metadata/metadata"]


def test_undo_after_a_verified_change_puts_the_checkpoint_back(ckpt):
    files = ckpt.spark
    original = below(files, ckpt.root)
    apply_change(ckpt, NewBatch(ckpt), checks_of(ckpt), Outcome("apply", dry_run=False))
    planned = undo_change(ckpt, CHANGE)  # a dry run, and the change's own batch is no live query
    assert not planned.refused and planned.lines[0] == "dry run: nothing changed"
    assert below(files, ckpt.root) != original
    undone = undo_change(ckpt, CHANGE, dry_run=False)
    assert undone.applied and undone.verified and below(files, ckpt.root) == original
    again = undo_change(ckpt, CHANGE, dry_run=False)
    assert again.lines[-1].startswith("nothing to undo: journal ")


def test_nothing_to_undo_without_a_journal(ckpt):
    out = undo_change(ckpt, CHANGE, dry_run=False)
    assert out.lines == [f"nothing to undo: no stand-in change journal beside {ckpt.root} (a "
                         "stand-in change that was refused or moved nothing writes none)"]


def test_a_change_to_a_new_location_is_removed_when_not_verified(ckpt):
    files = ckpt.spark
    before = snapshot(files)
    new = files.open("mem:/checkpoints/orders-new")

    class Copy(NewBatch):
        def call(self, out, journal):
            for rel in ckpt.fs.walk():
                ckpt.fs.copy_to(rel, new, rel)
    out = apply_change(ckpt, Copy(ckpt, verified=False), checks_of(ckpt),
                       Outcome("apply", dry_run=False), new_location=new)
    assert out.auto_undone and not new.exists() and snapshot(files) == before
    assert out.lines[-1] == "undone on its own: mem:/checkpoints/orders-new removed"
