"""Recover corrupted state: the fault matrix on real checkpoints, refusals, and papermill runs.

Every case of the matrix copies a never-faulted demo checkpoint (built once per provider setup),
breaks it, and checks the whole way back: the diagnosis names the broken file and the right last
good batch; a dry run changes nothing; the rollback, then a restart of the same demo query to the
same batch, gives state equal row for row to the never-faulted run; undo restores the faulted
checkpoint byte for byte. Checksums here are computed with hashlib on the local files, independently
of the library.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import zipfile
from pathlib import Path

import pytest
import tiers
import yaml
from checkpoint_trees import age, clean_checkpoints, state_differences, tree_sha

from state_runbooks.common.errors import RunbookError
from state_runbooks.core import state_loads
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import find_unit
from state_runbooks.demos import faults
from state_runbooks.demos.checkpoints import demo_query
from state_runbooks.runbooks import recover_corrupted_state as recovery
from state_runbooks.safety import activity as activity_guard

PROVIDERS = ("hdfs", "rocksdb", "rocksdb_changelog")
BATCHES = 4  # batches 0..3; the state of batch b is version b + 1
LAST = BATCHES - 1
LATEST_FILE = {"hdfs": "state/1/0/4.delta", "rocksdb": "state/1/0/4.zip",
               "rocksdb_changelog": "state/1/0/4.changelog"}
# fault -> (the path the diagnosis must name, the last good batch)
EXPECTED = {
    "truncate_latest": (None, LAST - 1),
    "garbage_latest": (None, LAST - 1),
    "delete_latest": (None, LAST - 1),
    "break_middle": (None, 1),  # version 3 is broken, and version 4 needs it
    "drop_partition": ("state/1/1", None),  # no version loads: replay from the first batch
    "drop_operator_metadata": ("state/1/_metadata/metadata", LAST),  # loads; Spark rewrites it
    "uncommitted_batch": (f"offsets/{LAST}", LAST - 1),  # the last batch was in flight
}


def zip_ssts(path) -> set[str]:
    with zipfile.ZipFile(path) as archive:
        text = archive.read("metadata").decode()
    return {s["dfsSstFileName"] for s in json.loads(text.split("\n", 1)[1])["sstFiles"]}


@pytest.fixture(scope="module")
def setups(spark, demo_factory, tmp_path_factory):
    """Per provider setup, built once: the never-faulted demo (batches 0..3) and the state rows
    of every store of that run at its last batch and, run one batch further, at the next."""
    cache = {}

    def get(provider):
        if provider not in cache:
            run = demo_factory("two_operators", provider, BATCHES, rows_per_batch=10, partitions=2)
            further = tmp_path_factory.mktemp(f"recovery-{provider}") / "reference"
            rows = clean_checkpoints(spark, run, further, LAST)
            cache[provider] = (run, rows)
        return cache[provider]
    return get


def expected_path(provider: str, fault: str, pristine: str, broken: str) -> str:
    path = EXPECTED[fault][0]
    if fault.endswith("_latest"):
        return LATEST_FILE[provider]
    if fault == "break_middle":
        if provider != "rocksdb":
            return LATEST_FILE[provider].replace("/4.", "/3.")
        # RocksDB without changelogs: every version is a zip listing its SST files; the middle
        # fault is the SST file version 3 added, which version 4 still lists.
        name = broken.rsplit("/", 1)[-1]
        zips = {v: zip_ssts(f"{pristine}/state/1/0/{v}.zip") for v in (2, 3, 4)}
        assert name in zips[3] - zips[2] and name in zips[4]
        return f"state/1/0/SSTs/{name}"
    return path


# -- the fault matrix ----------------------------------------------------------------------------
# Every fault on every provider. make test: a damaged newest file, a broken middle version (a
# RocksDB zip's SST file), a lost partition and a batch left in flight, one provider each (the log
# damages and the corpus's damages cover garbage and missing files besides).
CORE_FAULTS = {"truncate_latest": "hdfs", "break_middle": "rocksdb",
               "drop_partition": "rocksdb_changelog", "uncommitted_batch": "rocksdb_changelog"}


@pytest.mark.slow
@pytest.mark.parametrize("provider,fault", [
    tiers.case(provider, fault, core=CORE_FAULTS.get(fault) == provider, id=f"{provider}-{fault}")
    for fault in faults.FAULTS for provider in PROVIDERS])
def test_fault_matrix(spark, setups, copy_checkpoint, tmp_path, provider, fault):
    run, reference_rows = setups(provider)
    path = copy_checkpoint(run.checkpoint_path)
    ckpt = Checkpoint(spark, path)
    broken = faults.inject_fault(ckpt, fault, partition_id=1 if fault == "drop_partition" else 0)
    assert broken == expected_path(provider, fault, run.checkpoint_path, broken)
    age(path)
    faulted = tree_sha(path)

    # Diagnose: the broken file and the right last good batch, without changing a byte.
    diag = recovery.diagnose(ckpt)
    assert broken in [p.path for p in diag.problems], recovery.problem_lines(diag)
    last_good = EXPECTED[fault][1]
    assert diag.last_good_batch_id == last_good, recovery.bisection_lines(diag)
    plan = recovery.plan_rollback(ckpt, diag)
    dry = recovery.rollback(ckpt, plan)
    assert not dry.applied and dry.refused is None
    assert tree_sha(path) == faulted

    # Roll back, restart the same query, run it to the same batch: the never-faulted state.
    backup = tmp_path / "backup"
    outcome = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(backup))
    if fault in ("drop_operator_metadata", "uncommitted_batch"):
        # The committed state loads: nothing to move (a batch in flight is Spark's to re-run).
        assert plan.moves == [] and not outcome.applied and tree_sha(path) == faulted
    else:
        assert outcome.applied and outcome.verified, outcome.lines
        if (Path(path) / broken).is_file():
            assert broken in plan.moves
    target = plan.target_batch_id
    assert target == (recovery.REPLAY_FROM_START if last_good is None else last_good)
    # A batch left in flight is re-run first, then one new batch runs.
    until = LAST if target < LAST and plan.moves else LAST + 1
    faults.restart_demo(spark, run, path, max(1, until - target) if plan.moves else 1)
    restarted = Checkpoint(spark, path)
    assert restarted.last_committed_batch_id == until
    assert state_differences(spark, restarted, until, reference_rows[until]) == []
    if fault in ("drop_operator_metadata", "uncommitted_batch"):
        assert (Path(path) / broken).exists()  # the restarted query wrote it again, or kept it
        return

    # Undo: the faulted checkpoint, byte for byte (the restarted query's files go aside).
    journal = json.loads((backup / "journal.json").read_text())
    assert {m["path"] for m in journal["moves"]} >= set(plan.moves)
    for item in journal["moves"] + journal["copies"]:  # sizes and checksums of the originals
        assert item["sha256"] == faulted[item["path"]], item["path"]
        assert item["size"] == (backup / item["copy"]).stat().st_size
    # force: the restarted query wrote its batches seconds ago (it has stopped)
    undone = recovery.undo(ckpt, outcome.journal_path, dry_run=False, force=True)
    assert undone.applied and undone.verified, undone.lines
    assert tree_sha(path) == faulted
    assert json.loads((backup / "journal.json").read_text())["status"] == "undone"


def test_spark_facts_the_diagnosis_relies_on(spark, setups, copy_checkpoint):
    """Spark's reader skips a missing partition folder, and the state-metadata source lists no
    operator at all once one operator's metadata is gone (seen on the installed Spark)."""
    run, _ = setups("hdfs")
    path = copy_checkpoint(run.checkpoint_path)
    ckpt = Checkpoint(spark, path)
    whole = state_loads.load_store(ckpt, 1, "default", LAST)
    shutil.move(f"{path}/state/1/1", f"{path}.state-1-1")
    half = state_loads.load_store(ckpt.refresh(), 1, "default", LAST)
    assert whole.ok and half.ok and 0 < half.rows < whole.rows
    with pytest.raises(RunbookError) as excinfo:  # while a restarted query fails on it
        faults.restart_demo(spark, run, path, 1)
    assert "CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS" in str(excinfo.value)
    shutil.move(f"{path}/state/1/_metadata", f"{path}.state-1-metadata")
    assert spark.read.format("state-metadata").load(path).count() == 0


def _flip_one_byte(path: Path) -> None:
    """Change one byte in the middle of a file, its length and .crc sidecar kept (bit rot)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _load_error(spark, path: str) -> str:
    """The text of Spark's error loading operator 1 at the last batch ('' when it loads)."""
    try:
        spark.read.format("statestore").option("operatorId", 1).load(path).count()
    except Exception as exc:  # noqa: BLE001 - Py4J's error, with the JVM's causes
        return str(exc)
    return ""


@pytest.mark.parametrize("provider,file", [("rocksdb", "zip"), ("rocksdb", "sst"),
                                           ("rocksdb_changelog", "changelog"), ("hdfs", "delta")])
def test_which_files_spark_s_load_checks_against_their_sidecars(spark, setups, copy_checkpoint,
                                                                 provider, file):
    """RocksDB's load copies zips and SSTs through Hadoop's checksum layer: one changed byte fails
    it with a ChecksumException, so a load that succeeds vouches for them and diagnose does not
    read them again. Changelogs and deltas are read without that check (the byte reaches the
    decoder), so diagnose compares their bytes with the sidecars itself."""
    run, _ = setups(provider)
    path = copy_checkpoint(run.checkpoint_path)
    healthy = recovery.diagnose(Checkpoint(spark, path))
    # The report says how many files' bytes Spark's own load compared: RocksDB's zips and SSTs
    # (none of the HDFS-backed provider's; with changelogs, only where a snapshot is needed).
    said = "by Spark's own load" in "\n".join(recovery.structure_lines(healthy))
    assert said == (healthy.content_checked_by_spark > 0)
    assert healthy.content_checked_by_spark <= healthy.content_checked
    assert {"rocksdb": said, "hdfs": not said}.get(provider, True)
    needed = [rel for rel in healthy.inventory
              if rel.startswith("state/1/0/") and rel.endswith(f".{file}")]
    target = (sorted(needed)[-1] if file != "sst" else
              f"state/1/0/SSTs/{sorted(zip_ssts(f'{path}/{LATEST_FILE[provider]}'))[0]}")
    _flip_one_byte(Path(path) / target)

    error = _load_error(spark, path)
    assert error  # the state no longer loads
    assert ("ChecksumException" in error) == (file in ("zip", "sst"))
    diag = recovery.diagnose(Checkpoint(spark, path))
    assert target in [p["path"] for p in diag.broken()]
    assert diag.state_does_not_load
    if file not in ("zip", "sst"):
        assert "do not match its .crc sidecar" in next(p.problem for p in diag.problems
                                                         if p.path == target)


# -- the rest of the list -----------------------------------------------------------------
def test_hadoop_fs_additions(spark, setups, tmp_path, monkeypatch):
    from state_runbooks.core.fs import hadoop as hadoop_fs
    from state_runbooks.core.fs.hadoop import HadoopFS
    run, _ = setups("hdfs")
    fs = HadoopFS(spark, run.checkpoint_path)
    raw = fs.raw()
    local = Path(run.checkpoint_path)
    assert fs.has_checksum_layer and not raw.has_checksum_layer
    walked = raw.walk()
    assert set(walked) == set(tree_sha(local))  # sidecars included, as plain files
    assert walked["offsets/0"].size == (local / "offsets/0").stat().st_size
    for rel in ("offsets/0", "state/1/0/1.delta"):
        assert fs.sha256(rel) == raw.sha256(rel) == tree_sha(local)[rel]
        assert fs.verify_checksum(rel) is None
    target = HadoopFS(spark, str(tmp_path / "t")).raw()
    raw.copy_to("offsets/0", target, "a/0")
    assert (tmp_path / "t/a/0").read_bytes() == (local / "offsets/0").read_bytes()
    with pytest.raises(RunbookError, match="refusing to copy"):
        raw.copy_to("offsets/1", target, "a/0")
    target.move_to("a/0", target, "b/0")
    raw.copy_to("offsets/0", target, "a/0")
    with pytest.raises(RunbookError, match="refusing to move"):
        target.move_to("a/0", target, "b/0")
    # A file changed behind Hadoop's back no longer matches its sidecar.
    changed = tmp_path / "c"
    shutil.copytree(local / "offsets", changed)
    (changed / "0").write_bytes((changed / "0").read_bytes().replace(b"v1", b"v2"))
    assert "Checksum" in HadoopFS(spark, str(changed)).verify_checksum("0")
    others = sorted(f.name for f in changed.iterdir() if f.name[0] not in ".0")
    for one_thread_up_to in (0, 100):  # by threads, and in this thread
        monkeypatch.setattr(hadoop_fs, "_ONE_THREAD_UP_TO", one_thread_up_to)
        complaints = HadoopFS(spark, str(changed)).verify_checksums(["0", *others])
        assert list(complaints) == ["0"] and "Checksum" in complaints["0"] and others


def test_nothing_broken_reports_so_and_plans_nothing(spark, setups, copy_checkpoint, tmp_path):
    run, _ = setups("rocksdb")
    path = copy_checkpoint(run.checkpoint_path)
    age(path)
    before = tree_sha(path)
    ckpt = Checkpoint(spark, path)
    diag = recovery.diagnose(ckpt)
    assert diag.nothing_broken and diag.problems == [] and diag.last_good_batch_id == LAST
    assert diag.verdict() == ("nothing is broken: the state loads at the last committed batch "
                              f"{LAST}")
    assert recovery.problem_lines(diag) == ["nothing missing, empty or damaged"]
    assert recovery.options_lines(diag)[0].startswith("(c) nothing")
    plan = recovery.plan_rollback(ckpt, diag)
    assert plan.summary() == {"target_batch_id": LAST, "moves": []}
    outcome = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(tmp_path / "b"))
    assert not outcome.applied and not (tmp_path / "b").exists()
    assert tree_sha(path) == before
    from state_runbooks.running.results import Summary
    summary = Summary("recover_corrupted_state", ckpt.root, spark.version)
    recovery.summarize(summary, recovery.Recovery(diag, plan, outcome))
    assert summary.status == "ok" and summary.details["broken"] == []
    assert summary.details["plan"]["moves"] == [] and summary.details["applied"] is False


def test_an_active_looking_checkpoint_is_refused(spark, setups, copy_checkpoint, tmp_path):
    run, _ = setups("hdfs")
    path = copy_checkpoint(run.checkpoint_path)
    ckpt = Checkpoint(spark, path)
    faults.inject_fault(ckpt, "truncate_latest")
    age(path)
    os.utime(f"{path}/commits/{LAST}")  # the query committed a batch just now
    before = tree_sha(path)
    diag = recovery.diagnose(ckpt)
    plan = recovery.plan_rollback(ckpt, diag)
    activity = activity_guard.check_activity(ckpt)
    assert activity.looks_active and activity.reasons[0].startswith(f"commits/{LAST} was written")
    dry = recovery.rollback(ckpt, plan)
    assert "would be refused now" in dry.lines[-1]
    refused = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(tmp_path / "b"))
    assert not refused.applied and refused.refused.startswith("the query looks active")
    assert tree_sha(path) == before and not (tmp_path / "b").exists()

    # An active query of this session on the checkpoint, whatever the file times say.
    running = tmp_path / "running"
    shutil.copytree(run.checkpoint_path, running)
    age(running)
    active = Checkpoint(spark, str(running))
    query = (demo_query(spark, "two_operators", 10).writeStream.format("noop")
             .option("checkpointLocation", str(running)).trigger(processingTime="1 hour").start())
    try:
        activity = activity_guard.check_activity(active, quiet_minutes=0)
        # The query may also have written its first batch already: the session's word is enough.
        assert (f"query {query.id} is active in this Spark session on this checkpoint"
                in activity.reasons)
        plan = recovery.Plan(LAST - 1, [f"offsets/{LAST}"])
        assert recovery.rollback(active, plan, dry_run=False, backup_dir=str(tmp_path / "b"),
                                 quiet_minutes=0).refused
    finally:
        query.stop()
    assert not (tmp_path / "b").exists()


def test_bad_inputs_get_one_line(spark, setups, copy_checkpoint, tmp_path):
    run, _ = setups("hdfs")
    path = copy_checkpoint(run.checkpoint_path)
    ckpt = Checkpoint(spark, path)
    faults.inject_fault(ckpt, "break_middle")
    age(path)
    diag = recovery.diagnose(ckpt)
    cases = [
        (lambda: recovery.ROLLBACK.check_mode("repair"), "use 'diagnose', 'rollback' or 'undo'"),
        (lambda: recovery.plan_rollback(ckpt, diag, 7), "outside the retained range 0..3"),
        (lambda: recovery.plan_rollback(ckpt, diag, 2), "does not load (last good batch: 1)"),
        (lambda: faults.inject_fault(ckpt, "flood"), "fault 'flood' is not known"),
        (lambda: recovery.undo(ckpt, str(tmp_path)), "has no journal.json"),
    ]
    # Nothing to undo (no rollback journal beside it) is not an error: it says so, and nothing
    # is changed.
    nothing = recovery.undo(ckpt, dry_run=False)
    assert not nothing.applied and not nothing.refused
    assert nothing.lines[-1].startswith("nothing to undo: no rollback journal beside")
    plan = recovery.plan_rollback(ckpt, diag, 0)  # an older batch than the last good one is fine
    assert plan.target_batch_id == 0 and "offsets/1" in plan.moves
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    for backup, message in ((f"{path}/backup", "inside the checkpoint"),
                            (str(tmp_path / "full"), "is not empty")):
        cases.append((lambda b=backup: recovery.rollback(ckpt, plan, dry_run=False, force=True,
                                                          backup_dir=b), message))
    for call, message in cases:
        with pytest.raises(RunbookError) as excinfo:
            call()
        assert message in str(excinfo.value) and "\n" not in str(excinfo.value)

    # Undo refuses when a file of the checkpoint as the rollback found it vanished without a
    # backup (Spark's cleanup, after minBatchesToRetain more batches, deletes old versions).
    done = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(tmp_path / "backup"))
    assert done.applied and done.verified
    shutil.move(f"{path}/state/0/0/1.delta", tmp_path / "1.delta")
    refused = recovery.undo(ckpt, done.journal_path, dry_run=False)
    assert not refused.applied and "no backup (e.g. state/0/0/1.delta)" in refused.refused
    shutil.move(tmp_path / "1.delta", f"{path}/state/0/0/1.delta")
    assert recovery.undo(ckpt, done.journal_path, dry_run=False).verified


# -- papermill runs with parameters (fixture run_notebook in conftest.py) -------------------------
PLAYBOOK = Path(__file__).resolve().parents[2] / "runbooks" / "cannot-load-state-store.md"


def playbook_rollback_parameters() -> dict:
    """The parameter file the playbook tells on-call engineers to write (its yaml block)."""
    text = PLAYBOOK.read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    return yaml.safe_load(block)


@pytest.mark.slow
@pytest.mark.notebook
def test_rollback_then_undo_with_papermill(spark, setups, copy_checkpoint, run_notebook, tmp_path):
    run, _ = setups("hdfs")
    path = copy_checkpoint(run.checkpoint_path)
    broken = faults.inject_fault(Checkpoint(spark, path), "truncate_latest")
    age(path)
    faulted = tree_sha(path)

    parameters = playbook_rollback_parameters()
    assert parameters["mode"] == "rollback" and parameters["dry_run"] is False
    parameters.update(checkpoint_path=path, summary_path=str(tmp_path / "rollback.json"))
    run_notebook("05_recover_corrupted_state", **parameters)
    summary = json.loads((tmp_path / "rollback.json").read_text())
    root = Checkpoint(spark, path).root
    assert summary["runbook"] == "recover_corrupted_state" and summary["status"] == "critical"
    assert summary["last_committed_batch_id"] == LAST and summary["last_good_batch_id"] == LAST - 1
    entry = next(b for b in summary["broken"] if b["path"] == broken)
    assert entry["error_class"] == "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED"
    assert summary["plan"]["target_batch_id"] == LAST - 1 and broken in summary["plan"]["moves"]
    assert summary["applied"] is True
    assert summary["backup_dir"].startswith(root + recovery.ROLLBACK.mark)
    assert summary["journal_path"] == summary["backup_dir"] + "/journal.json"
    assert Checkpoint(spark, path).last_committed_batch_id == LAST - 1
    assert {"rollback_applied", "state_does_not_load"} <= {f["code"] for f in summary["findings"]}

    run_notebook("05_recover_corrupted_state", checkpoint_path=path, mode="undo", dry_run=False,
                 summary_path=str(tmp_path / "undo.json"))
    undo = json.loads((tmp_path / "undo.json").read_text())
    assert undo["applied"] is True and undo["journal_path"] == summary["journal_path"]
    # The diagnosis in that run saw the rolled-back checkpoint: after the undo it is not the
    # checkpoint's state, and the summary does not say "nothing is broken".
    codes = {f["code"] for f in undo["findings"]}
    assert "diagnosis_before_undo" in codes and "nothing_broken" not in codes, codes
    assert undo["broken"] is None
    assert tree_sha(path) == faulted
    again = recovery.undo(Checkpoint(spark, path), dry_run=False)  # nothing left: said, no error
    assert not again.applied and not again.refused and "was already undone" in again.lines[-1]


# -- every operator shape, with and without .crc sidecars ------------------------------------------
SHAPES = ("dedup", "window_agg", "join", "dedup_within_watermark", "join_v3", "session_window",
          "pandas_with_state", "transform_with_state", "limit")
# join_v3, transform_with_state and limit need the operator model: Spark's default read of a
# join in state format 3 or of transformWithState fails (a reader limit), and a streaming limit
# keeps state in partition 0 only, whatever numPartitions says.
# One representative fault per shape not already in the fault matrix: (fault, operator).
# make test: the plainest shapes, and those that keep state in ways of their own (sessions merged
# per key, a global limit's single partition); make test-extended: the others.
CORE_SHAPES = {"dedup", "window_agg", "join", "session_window", "limit"}
SHAPE_FAULTS = {"dedup_within_watermark": "break_middle", "session_window": "garbage_latest",
                "pandas_with_state": "truncate_latest", "join_v3": "garbage_latest",
                "transform_with_state": "break_middle", "limit": "break_middle"}


def without_sidecars(path: str) -> str:
    """What an object store holds: the same files, no ``.crc`` sidecars."""
    for crc in Path(path).rglob(".*.crc"):
        crc.unlink()
    return path


def status_of(spark, ckpt, diag) -> str:
    from state_runbooks.running.results import Summary
    summary = Summary("recover_corrupted_state", ckpt.root, spark.version)
    recovery.summarize(summary, recovery.Recovery(diag, recovery.plan_rollback(ckpt, diag)))
    return summary.status


@pytest.fixture(scope="module")
def shapes(demo_factory):
    return lambda shape: demo_factory(shape, "hdfs", 3, rows_per_batch=10, partitions=2)


@pytest.mark.slow
@pytest.mark.parametrize("shape", tiers.tiered(SHAPES, CORE_SHAPES))
def test_every_healthy_shape_without_sidecars_is_ok(spark, shapes, copy_checkpoint, shape):
    """As an object store holds them. With their sidecars, every shape is diagnosed healthy in
    the checkpoint corpus (test_checkpoint_corpus.py,
    test_05_finds_nothing_broken_and_plans_nothing)."""
    ckpt = Checkpoint(spark, without_sidecars(copy_checkpoint(shapes(shape).checkpoint_path)))
    diag = recovery.diagnose(ckpt)
    assert diag.nothing_broken, (recovery.problem_lines(diag), recovery.load_lines(diag))
    assert recovery.plan_rollback(ckpt, diag).moves == []
    assert status_of(spark, ckpt, diag) == "ok"


@pytest.mark.slow
@pytest.mark.parametrize("shape", tiers.tiered(sorted(SHAPE_FAULTS), {"session_window", "limit"}))
def test_a_broken_shape_without_sidecars_names_the_file(spark, shapes, copy_checkpoint, shape):
    """Damage only Spark can see (no .crc sidecars, as on object stores and over Spark Connect):
    the file at fault is found by Spark's own loads, with its error class."""
    path = without_sidecars(copy_checkpoint(shapes(shape).checkpoint_path))
    ckpt = Checkpoint(spark, path)
    # Partition 1 (a streaming limit: 0): the file is found by Spark's loads, not by its order.
    broken = faults.inject_fault(ckpt, SHAPE_FAULTS[shape],
                                   partition_id=0 if shape == "limit" else 1)
    diag = recovery.diagnose(ckpt)
    named = {p.path: p for p in diag.problems}
    assert broken in named, recovery.problem_lines(diag)
    assert named[broken].error_class.startswith("CANNOT_LOAD_STATE_STORE"), named[broken]
    assert diag.state_does_not_load and status_of(spark, ckpt, diag) == "critical"
    assert broken in recovery.plan_rollback(ckpt, diag).moves


def test_a_garbage_delta_in_the_middle_without_sidecars(spark, setups, copy_checkpoint):
    """Same size, garbage bytes, no .crc: nothing on disk looks wrong; Spark's loads name it.
    The single-version change feed reads exactly that version's file (a later one reads fine)."""
    run, _ = setups("hdfs")
    path = without_sidecars(copy_checkpoint(run.checkpoint_path))
    ckpt = Checkpoint(spark, path)
    target = "state/1/1/2.delta"
    data = (Path(path) / target).read_bytes()
    (Path(path) / target).write_bytes(hashlib.sha256(b"x").digest() * (len(data) // 32 + 1))
    os.truncate(Path(path) / target, len(data))
    diag = recovery.diagnose(ckpt)
    assert [(p.path, p.error_class) for p in diag.problems] == [
        (target, "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED")]
    assert diag.last_good_batch_id == 0
    assert diag.loads <= len(diag.load_test) + math.ceil(math.log2(BATCHES)) + 1
    # What the search relies on, seen on the installed Spark: the change feed of one batch reads
    # that version's file only, and its error names the failed task (= the partition folder).
    def changes(batch):
        return (spark.read.format("statestore").option("operatorId", 1)
                .option("readChangeFeed", True).option("changeStartBatchId", batch)
                .option("changeEndBatchId", batch).load(path))
    with pytest.raises(Exception, match=r"Lost task 1\.0"):
        changes(1).count()
    assert changes(2).count() > 0


def test_a_reader_limit_is_unknown_never_critical(spark, setups, copy_checkpoint):
    """A unit the reader cannot read (here: a reader option Spark refuses) is "unknown" with no
    plan, while the same files are sound."""
    run, _ = setups("hdfs")
    path = copy_checkpoint(run.checkpoint_path)
    ckpt = Checkpoint(spark, path)
    limited = dataclasses.replace(find_unit(ckpt, 1), state_variable="no-such-variable",
                                  options={"stateVarName": "no-such-variable"})
    result = state_loads.load_unit(ckpt, limited, LAST)
    assert not result.ok and result.reader_limit and not result.damaged
    assert result.error_class.startswith("STDS_")
    assert state_loads.is_store_load_failure("CANNOT_LOAD_STATE_STORE.UNCATEGORIZED")
    assert not state_loads.is_store_load_failure("STDS_FAILED_TO_READ_STATE_SCHEMA")
    diag = recovery.diagnose(ckpt)
    diag.load_test.append(result)
    assert not diag.state_does_not_load and diag.verdict().startswith("unknown: Spark's reader "
                                                                      "cannot read 1/no-such")
    plan = recovery.plan_rollback(ckpt, diag)
    assert plan.target_batch_id is None and plan.moves == []
    assert status_of(spark, ckpt, diag) == "warning"


def test_gaps_are_reported_without_state(spark, tmp_path):
    from state_runbooks.demos.checkpoints import _rate  # noqa: F401 - only the source, no state
    path = tmp_path / "stateless"
    from state_runbooks.session.spark_session import session_conf
    with session_conf(spark, {"spark.sql.streaming.noDataMicroBatches.enabled": "false"}):
        for _ in range(3):
            (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 2).load()
             .writeStream.format("noop").option("checkpointLocation", str(path))
             .trigger(availableNow=True).start().awaitTermination())
    shutil.move(path / "offsets/1", tmp_path / "offsets-1")
    with pytest.raises(RunbookError, match="has no stateful operator"):
        Checkpoint(spark, str(path))
    ckpt = Checkpoint(spark, str(path), require_state=False)
    diag = recovery.diagnose(ckpt)
    assert "offsets/1" in [p.path for p in diag.problems]
    assert diag.verdict().startswith("no stateful operator")
    assert recovery.plan_rollback(ckpt, diag).moves == []
    assert status_of(spark, ckpt, diag) == "warning"


def test_activity_guard_knows_the_trigger_interval(spark, setups, copy_checkpoint,
                                                    monkeypatch):
    run, _ = setups("hdfs")
    path = copy_checkpoint(run.checkpoint_path)
    ckpt = Checkpoint(spark, path)
    stamps = [ckpt.offsets(b).timestamp_ms for b in ckpt.offset_batch_ids]
    interval = activity_guard.trigger_interval_ms(ckpt)
    assert interval == sorted(b - a for a, b in zip(stamps, stamps[1:]))[(len(stamps) - 1) // 2]
    newest = max(os.path.getmtime(f"{path}/{d}/{LAST}") for d in ("offsets", "commits"))
    # A query that triggers hourly and wrote 2 hours ago still looks active; 4 hours: stopped.
    hourly = 3_600_000
    monkeypatch.setattr(activity_guard, "trigger_interval_ms", lambda _ckpt, _ids=None: hourly)
    two_hours = activity_guard.check_activity(ckpt, now_ms=int(newest * 1000) + 2 * hourly)
    four_hours = activity_guard.check_activity(ckpt, now_ms=int(newest * 1000) + 4 * hourly)
    assert two_hours.looks_active and "trigger interval of about 3600 s" in two_hours.reasons[0]
    assert not four_hours.looks_active
    assert "quiet means nothing written for 10800 s" in four_hours.seen


def test_undo_stopped_halfway_says_where_and_resumes(spark, setups, copy_checkpoint, tmp_path):
    run, _ = setups("hdfs")
    path = copy_checkpoint(run.checkpoint_path)
    ckpt = Checkpoint(spark, path)
    faults.inject_fault(ckpt, "drop_partition", partition_id=1)  # replay from the start
    age(path)
    faulted = tree_sha(path)
    diag = recovery.diagnose(ckpt)
    plan = recovery.plan_rollback(ckpt, diag)
    assert plan.target_batch_id == recovery.REPLAY_FROM_START
    done = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(tmp_path / "b"))
    assert done.applied and done.verified and not (Path(path) / "state").exists()
    # Undo after the whole state/ folder went: the checkpoint opens without state.
    bare = Checkpoint(spark, path, require_state=False)
    # A moved file and its copy out of reach (say, a storage hiccup): undo stops halfway.
    moved, copy = tmp_path / "b/moved/state/1/0/2.delta", tmp_path / "b/copy/state/1/0/2.delta"
    shutil.move(moved, tmp_path / "moved-2.delta")
    shutil.move(copy, tmp_path / "copy-2.delta")
    with pytest.raises(RunbookError) as excinfo:
        recovery.undo(bare, done.journal_path, dry_run=False, force=True)
    message = str(excinfo.value)
    assert message.startswith("undo stopped halfway:") and "\n" not in message
    assert "/displaced" in message and f"journal_path={done.journal_path}" in message
    shutil.move(tmp_path / "moved-2.delta", moved)
    shutil.move(tmp_path / "copy-2.delta", copy)
    resumed = recovery.undo(bare, done.journal_path, dry_run=False, force=True)
    assert resumed.applied and resumed.verified and tree_sha(path) == faulted

