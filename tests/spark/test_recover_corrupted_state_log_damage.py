"""Damage to the logs and metadata files beside the state, on real checkpoints written by real
queries: 05's diagnosis names the file and the damage in one line and says what Spark does on
restart (checked here by really restarting the query on a copy), its plan is the minimal repair,
and that repair, applied through the rollback machinery (backup, journal, undo) and followed by a
restart, gives state equal row for row to a run that never broke. Nothing raises a traceback.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import tiers
from checkpoint_trees import clean_checkpoints, state_differences

from state_runbooks.common.errors import RunbookError, root_cause, spark_error_text
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs.base import sidecar_of
from state_runbooks.demos import faults
from state_runbooks.runbooks import recover_corrupted_state as recovery

BATCHES = 4  # batches 0..3
LAST = BATCHES - 1
RUNS = "runs"  # the restart works
DAMAGES = ("truncated", "garbage", "missing", "empty")

# The fault matrix: file kind, damage, what the finding says, what Spark does on restart (a
# substring of its error, or RUNS), and the plan (the files moved aside; None: no plan).
_JSON_FAIL = "Query"  # the stream fails in Spark's JSON / log parser (no error class)
MATRIX = [
    *[{"kind": "metadata", "damage": d, "finding": w, "spark": s, "plan": None}
      for d, w, s in (("truncated", "cut short", "JsonEOFException"),
                      ("garbage", "garbage", "JsonParseException"),
                      ("missing", "missing", "STREAMING_CHECKPOINT_MISSING_METADATA_FILE"),
                      ("empty", "empty", "MismatchedInputException"))],
    *[{"kind": "offsets_latest", "damage": d, "finding": w, "spark": s,
       "plan": [f"commits/{LAST}", f"offsets/{LAST}"] if d != "missing" else [f"commits/{LAST}"]}
      for d, w, s in (("truncated", "cut short", _JSON_FAIL), ("garbage", "garbage", _JSON_FAIL),
                      ("missing", "commit without an offsets entry",
                       "CONCURRENT_STREAM_LOG_UPDATE"), ("empty", "empty", _JSON_FAIL))],
    *[{"kind": "commits_latest", "damage": d, "finding": w, "spark": s,
       # missing: batch LAST is in flight, as after a crash: nothing to move, a restart re-runs
       # it over the offsets it logged
       "plan": [f"commits/{LAST}"] if d != "missing" else "in flight"}
      for d, w, s in (("truncated", "cut short", _JSON_FAIL), ("garbage", "garbage", _JSON_FAIL),
                      ("missing", "in flight", RUNS), ("empty", "empty", _JSON_FAIL))],
    *[{"kind": "offsets_middle", "damage": d, "finding": w, "spark": s, "plan": []}
      for d, w, s in (("truncated", "cut short", RUNS), ("garbage", "garbage", RUNS),
                      ("missing", "gap", RUNS), ("empty", "empty", RUNS))],
    *[{"kind": "operator_metadata", "damage": d, "finding": w, "spark": RUNS,
       "plan": ["state/1/_metadata/metadata"] if d != "missing" else []}
      for d, w in (("truncated", "cut short"), ("garbage", "garbage"),
                   ("missing", "operator metadata missing"), ("empty", "empty"))],
    *[{"kind": "state_schema", "damage": d, "finding": w, "spark": s,
       "plan": ["state/1/0/_metadata/schema"] if d != "missing" else []}
      for d, w, s in (("truncated", "cut short", "EOFException"),
                      ("garbage", "garbage", "EOFException"), ("missing", "", RUNS),
                      ("empty", "empty", "EOFException"))],
]
# RocksDB keeps the same logs; two damages per file kind keep the run short.
# Each damage with the file's .crc sidecar left as it was (as after a real corruption); a cut-short
# file also without it (a file system that keeps none, or a copy that dropped them).
CASES = ([("hdfs", c, True) for c in MATRIX]
         + [("hdfs", c, False) for c in MATRIX if c["damage"] == "truncated"]
         + [("rocksdb", c, True) for c in MATRIX if c["damage"] in ("truncated", "missing")])
# make test: each file kind once with each damage among them, a cut-short file without its
# sidecar, and RocksDB's logs once; make test-extended: the rest of the matrix.
CORE_CASES = {"hdfs-metadata-truncated", "hdfs-offsets_latest-garbage",
              "hdfs-commits_latest-missing", "hdfs-offsets_middle-empty",
              "hdfs-operator_metadata-truncated", "hdfs-state_schema-garbage",
              "hdfs-state_schema-truncated-no-sidecar", "rocksdb-offsets_latest-missing"}


def _case_id(provider: str, case: dict, sidecar: bool) -> str:
    return f"{provider}-{case['kind']}-{case['damage']}" + ("" if sidecar else "-no-sidecar")


@pytest.fixture(scope="module")
def setups(spark, demo_factory, tmp_path_factory):
    cache = {}

    def get(provider):
        if provider not in cache:
            run = demo_factory("two_operators", provider, BATCHES, rows_per_batch=10, partitions=2)
            further = tmp_path_factory.mktemp(f"log-damage-{provider}") / "reference"
            rows = clean_checkpoints(spark, run, further, LAST)
            query_id = json.loads(Path(run.checkpoint_path, "metadata").read_text())["id"]
            cache[provider] = (run, rows, query_id)
        return cache[provider]
    return get


def _restart(spark, run, path: str) -> str:
    try:
        faults.restart_demo(spark, run, path, 1)
    except RunbookError as exc:
        return f"{spark_error_text(exc)} {exc} {root_cause(exc.spark_error)}"
    return RUNS


@pytest.mark.slow
@pytest.mark.parametrize("provider,case,sidecar", [
    tiers.case(*c, core=_case_id(*c) in CORE_CASES, id=_case_id(*c)) for c in CASES])
def test_log_damage_matrix(spark, setups, tmp_path, provider, case, sidecar):
    run, reference, query_id = setups(provider)
    path = str(tmp_path / "checkpoint")
    shutil.copytree(run.checkpoint_path, path)
    ckpt = Checkpoint(spark, path)
    broken = faults.inject_fault(ckpt, f"{case['kind']}:{case['damage']}")
    if not sidecar:
        Path(path, sidecar_of(broken)).unlink(missing_ok=True)
        ckpt.refresh()

    # What Spark really does on restart, on a copy.
    probe = str(tmp_path / "probe")
    shutil.copytree(path, probe)
    said = _restart(spark, run, probe)
    assert (said == RUNS) if case["spark"] == RUNS else (case["spark"] in said), said

    # 05's diagnosis: one line naming the file and the damage; nothing raises.
    diag = recovery.diagnose(ckpt)
    lines = recovery.problem_lines(diag)
    # a missing newest entry is reported on its partner: the commit without offsets, the offsets
    # entry without a commit (in flight)
    named_path = {("offsets_latest", "missing"): f"commits/{LAST}",
                  ("commits_latest", "missing"): f"offsets/{LAST}"}.get(
        (case["kind"], case["damage"]), broken)
    named = [line for line in lines if line.startswith(named_path)]
    if case["kind"] == "state_schema" and case["damage"] == "missing":
        assert not named, lines  # Spark writes it again: nothing to report
    else:
        assert named and case["finding"] in named[0] and "\n" not in named[0], lines
    plan = recovery.plan_rollback(ckpt, diag)
    summary_kinds = {p.critical for p in diag.problems}
    if case["spark"] != RUNS:
        assert True in summary_kinds, lines
    if case["plan"] is None:  # metadata: no files to move; the finding says which id to write
        assert plan.target_batch_id is None and not plan.moves
        if case["damage"] == "truncated":
            assert query_id[:8] in named[0] or "logs or listener" in named[0]
        Path(path, "metadata").write_text(json.dumps({"id": query_id}))
        for side in Path(path).glob(".metadata.crc"):
            side.unlink()
        assert _restart(spark, run, path) == RUNS
        restarted = Checkpoint(spark, path)
        assert restarted.query_id == query_id
        assert state_differences(spark, restarted, LAST + 1, reference[LAST + 1]) == []
        return
    if case["plan"] == "in flight":
        # The committed state loads: Spark re-runs the batch over the offsets it logged.
        assert plan.moves == [] and plan.leaves == [f"offsets/{LAST}"], recovery.plan_lines(plan)
    else:
        assert sorted(plan.moves) == sorted(case["plan"]), recovery.plan_lines(plan)
    if not plan.moves:
        return
    outcome = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(tmp_path / "backup"),
                                force=True)
    assert outcome.applied and outcome.verified, outcome.lines
    # One restart: Spark first re-runs a batch left in flight, then runs one new batch.
    assert _restart(spark, run, path) == RUNS
    restarted = Checkpoint(spark, path)
    until = restarted.last_committed_batch_id
    assert until in reference
    assert state_differences(spark, restarted, until, reference[until]) == []


def test_a_new_query_id_restarts_as_another_query(spark, setups, tmp_path):
    """A metadata file with a new id: Spark restarts and the state loads, but the query is
    another one (its id changes), which is why 05 names the id to keep."""
    run, reference, query_id = setups("hdfs")
    path = str(tmp_path / "checkpoint")
    shutil.copytree(run.checkpoint_path, path)
    Path(path, ".metadata.crc").unlink()
    Path(path, "metadata").write_text(json.dumps({"id": "00000000-0000-4000-8000-000000000000"}))
    assert _restart(spark, run, path) == RUNS
    restarted = Checkpoint(spark, path)
    assert restarted.query_id != query_id
    assert state_differences(spark, restarted, LAST + 1, reference[LAST + 1]) == []


def test_checkpoint_reads_of_damaged_logs_are_one_line(spark, setups, tmp_path):
    run, _, _ = setups("hdfs")
    path = str(tmp_path / "checkpoint")
    shutil.copytree(run.checkpoint_path, path)
    ckpt = Checkpoint(spark, path)
    faults.inject_fault(ckpt, "metadata:garbage")
    faults.inject_fault(ckpt, "offsets_latest:truncated")
    for read in (lambda: ckpt.query_id, lambda: ckpt.offsets(LAST)):
        with pytest.raises(RunbookError) as excinfo:
            read()
        assert "damaged" in str(excinfo.value) and "\n" not in str(excinfo.value)
    assert ckpt.refresh().pinned_conf  # the newest entry that reads pins the same values


# -- a file source's log ---------------------------------------------------------------------------
def _add_input(root: Path, i: int) -> None:
    inputs = root / "in"
    inputs.mkdir(parents=True, exist_ok=True)
    (inputs / f"part-{i}.json").write_text("".join(json.dumps({"k": f"k{(i * 5 + j) % 7}"}) + "\n"
                                                   for j in range(5)))


def _file_source_run(spark, root: Path, checkpoint: Path) -> None:
    """A count per key over the JSON files in ``root/in``, one file per batch (the file source
    logs each batch's files in sources/0/<n>), until every file is read."""
    query = (spark.readStream.schema("k string").option("maxFilesPerTrigger", 1)
             .json(str(root / "in")).groupBy("k").count().writeStream.format("noop")
             .outputMode("update").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()


@pytest.fixture(scope="module")
def file_source(spark, tmp_path_factory):
    """A 3-batch file-source checkpoint and, for reference, the same query run one file further."""
    root = tmp_path_factory.mktemp("file-source")
    for i in range(3):
        _add_input(root, i)
        _file_source_run(spark, root, root / "checkpoint")
    reference = root / "reference"
    shutil.copytree(root / "checkpoint", reference)
    _add_input(root, 3)  # the restarts below read it too
    _file_source_run(spark, root, reference)
    return root, str(reference)


@pytest.mark.slow
@pytest.mark.parametrize("entry,damage", [  # make test: the newest and the oldest entry once each
    ("newest", "truncated"), tiers.case("newest", "garbage", core=False),
    tiers.case("newest", "missing", core=False), ("oldest", "garbage")])
def test_a_damaged_file_source_log_entry(spark, file_source, tmp_path, entry, damage):
    root, reference = file_source
    path = tmp_path / "checkpoint"
    shutil.copytree(root / "checkpoint", path)
    rel = "sources/0/2" if entry == "newest" else "sources/0/0"
    target = path / rel
    (path / "sources/0" / f".{target.name}.crc").unlink()
    if damage == "missing":
        target.unlink()
    else:
        data = target.read_bytes()
        target.write_bytes(data[:len(data) // 2] if damage == "truncated" else b"\x00garbage\xff")
    probe = tmp_path / "probe"
    shutil.copytree(path, probe)
    with pytest.raises(Exception):  # noqa: B017 - what Spark does: the restart fails
        _file_source_run(spark, root, probe)

    ckpt = Checkpoint(spark, str(path))
    diag = recovery.diagnose(ckpt)
    lines = recovery.problem_lines(diag)
    named = [line for line in lines if line.startswith(rel)]
    assert named and "a restart fails" in named[0] and "\n" not in named[0], lines
    plan = recovery.plan_rollback(ckpt, diag)
    if entry == "oldest":  # no move rebuilds it: no plan, the finding says restore from a backup
        assert plan.target_batch_id is None and not plan.moves and "backup" in named[0]
        return
    assert sorted(plan.moves) == ["commits/2", "offsets/2"] + ([rel] if damage != "missing"
                                                               else []), plan.moves
    outcome = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(tmp_path / "backup"),
                                force=True)
    assert outcome.applied and outcome.verified, outcome.lines
    _file_source_run(spark, root, path)  # batch 2 runs again, then the new file's batch 3
    assert state_differences(spark, Checkpoint(spark, str(path)), 3, reference) == []
