"""A corpus of checkpoint shapes written by real streaming queries, and every runbook that reads a
checkpoint run on each through its library functions, as its notebook calls them.

Twenty-four shapes: every stateful operator family (aggregation on one and on a two-column key
without a watermark, deduplication with and within a watermark, stream-stream join in state formats
2 and 3, session window, applyInPandasWithState, transformWithState with rows and with pandas,
limit, two chained operators) on the HDFS-backed provider and on RocksDB with and without
changelogs, plus Avro encoding, a short retention that purges logs, checkpoint format v2, and what
Spark 4.2+ adds: named sources (offsets log format 2), row checksums, file checksums, and all of
them at once on what real-time mode forces (RocksDB, changelogs, format 2). On each, healthy:

- 03, calling what its notebook calls, counts every unit (store, join store, state variable,
  timers) exactly as Spark's reader does with the options written out by hand, and its checklist
  calls nothing critical;
- 02 measures every unit with the same rows, and names each state variable of transformWithState;
- 05 finds nothing broken and plans no move;
- 07 and 09 check and plan in dry run, refusing an unsupported shape in one line at most;
- 01 names the provider the checkpoint pins;
- 08 says the unchanged job restarts (its rehearsal ran), 10 migrates nothing for it, and 11
  traces a key as Spark's reader shows it;
- and none of it writes a byte into the checkpoint or beside it.

Seven damages, each on a copy of one shape (a truncated delta, garbage inside a changelog in the
middle of the history, a deleted SST file, a deleted newest commit, a deleted newest offsets
entry, and in an offsets log of format 2 a garbage newest entry and one whose names are lost):
05 names the damaged file and plans the smallest rollback; applied, and the same query restarted
on the result, the state equals row for row that of a run that never broke; undo gives back the
damaged checkpoint byte for byte.

make test runs six of the shapes and the damages made on them; make test-extended runs the others
(tests/tiers.py).
"""
from __future__ import annotations

import json
import os
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import tiers
from checkpoint_trees import age, clean_checkpoints, reader_rows, state_differences, tree_sha

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.runtime import provider_classes
from state_runbooks.common.spark_settings import (
    CHECKPOINT_FORMAT_CONF,
    FILE_CHECKSUM_CONF,
    PROVIDER_CONF,
    ROW_CHECKSUM_CONF,
    SOURCE_EVOLUTION_CONF,
)
from state_runbooks.core import growth as state_growth
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import tree_checksums
from state_runbooks.core.state_file_stats import partition_figures
from state_runbooks.demos import faults
from state_runbooks.demos.checkpoints import DemoRun, build_demo_checkpoint, provider_conf
from state_runbooks.runbooks import enable_rocksdb as er
from state_runbooks.runbooks import estimate_state_size as sizing
from state_runbooks.runbooks import fleet_health as fleet
from state_runbooks.runbooks import inspect_state
from state_runbooks.runbooks import recover_corrupted_state as recovery
from state_runbooks.runbooks import repartition_state as rp
from state_runbooks.runbooks.repartition_state.forecast import scan_state
from state_runbooks.runbooks import rewrite_state as rs
from state_runbooks.runbooks.rewrite_state.plan import plan_rewrite
from state_runbooks.runbooks import check_query_change as qc
from state_runbooks.runbooks import migrate_state as ms
from state_runbooks.runbooks import move_checkpoint as mc
from state_runbooks.runbooks import trace_key as tk
from state_runbooks.core.operators import state_units
from state_runbooks.core.state_reader import read_unit
from state_runbooks.running.checklist import WATERMARK_RULES
from state_runbooks.running.results import Summary
from state_runbooks.session.spark_session import session_conf

pytestmark = pytest.mark.slow

ROWS_PER_BATCH = 10
PARTITIONS = 2
BATCHES = 3
V2 = {CHECKPOINT_FORMAT_CONF: "2"}
AVRO = {"spark.sql.streaming.stateStore.encodingFormat": "avro"}
SHORT_RETENTION = {"spark.sql.streaming.minBatchesToRetain": "3"}
# Spark 4.2+: named sources (offsets log format 2), a checksum in every state row, and with
# checkpoint format 2 a checksum file beside every state file.
NAMED = {SOURCE_EVOLUTION_CONF: "true"}
ROW_CHECKSUMS = {ROW_CHECKSUM_CONF: "true"}
FILE_CHECKSUMS = {**V2, FILE_CHECKSUM_CONF: "true"}


# -- the corpus: each shape's units and the reader options that select them, written out by hand --
def _stores(*names: str, operator_id: int = 0) -> dict[str, dict]:
    return {f"{operator_id}/{n}": {"operatorId": operator_id, "storeName": n} for n in names}


def _variables(*names: str, timers: bool = False) -> dict[str, dict]:
    units = {f"0/{n}": {"operatorId": 0, "stateVarName": n} for n in names}
    return {**units, **({"0/timers": {"operatorId": 0, "readRegisteredTimers": "true"}}
                        if timers else {})}


DEFAULT = _stores("default")
JOIN = _stores("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues",
               "right-keyWithIndexToValue")
USER_ACTIVITY = _variables("events", "recent_ids", "amount_by_bucket", timers=True)


@dataclass(frozen=True)
class Shape:
    workload: str
    provider: str  # the provider setup it runs on
    units: dict  # unit label -> Spark's reader options
    conf: dict = field(default_factory=dict)  # session confs beyond the demo's
    batches: int = BATCHES


CORPUS = {
    "window_agg": Shape("window_agg", "hdfs", DEFAULT, batches=4),
    "composite_agg": Shape("composite_agg", "hdfs", DEFAULT),
    "dedup": Shape("dedup", "rocksdb_changelog", DEFAULT, batches=4),
    "dedup_short_retention": Shape("dedup", "hdfs", DEFAULT, SHORT_RETENTION, batches=6),
    "dedup_within_watermark": Shape("dedup_within_watermark", "hdfs", DEFAULT),
    "join": Shape("join", "rocksdb", JOIN, batches=4),
    "join_v3": Shape("join_v3", "rocksdb_changelog", JOIN),
    "join_format_v2": Shape("join", "rocksdb", JOIN, V2),
    "session_window": Shape("session_window", "hdfs", DEFAULT, batches=4),
    "pandas_with_state": Shape("pandas_with_state", "hdfs", DEFAULT),
    "transform_with_state": Shape("transform_with_state", "rocksdb_changelog", USER_ACTIVITY),
    "transform_with_state_avro": Shape("transform_with_state", "rocksdb", USER_ACTIVITY, AVRO),
    "transform_with_state_format_v2": Shape("transform_with_state", "rocksdb", USER_ACTIVITY, V2),
    "transform_with_state_pandas": Shape("transform_with_state_pandas", "rocksdb_changelog",
                                         _variables("events", "recent_ids"), batches=4),
    "limit": Shape("limit", "hdfs", DEFAULT),
    "two_operators": Shape("two_operators", "rocksdb",
                           {**DEFAULT, **_stores("default", operator_id=1)}),
    "window_agg_named": Shape("window_agg", "hdfs", DEFAULT, NAMED, batches=4),
    "join_named": Shape("join", "rocksdb_changelog", JOIN, NAMED),
    "session_window_named": Shape("session_window", "rocksdb", DEFAULT, NAMED),
    "window_agg_row_checksums": Shape("window_agg", "hdfs", DEFAULT, ROW_CHECKSUMS),
    "dedup_row_checksums": Shape("dedup", "rocksdb_changelog", DEFAULT, ROW_CHECKSUMS,
                                 batches=4),
    "transform_with_state_file_checksums": Shape("transform_with_state", "rocksdb",
                                                 USER_ACTIVITY, FILE_CHECKSUMS),
    # What real-time mode forces on a stateful query (RocksDB, changelogs, checkpoint format 2),
    # with every other 4.2+ option on: no local source runs in real-time mode
    # (test_real_time_mode_needs_a_source_no_local_query_has).
    "join_every_new_option": Shape("join", "rocksdb_changelog", JOIN,
                                   {**NAMED, **ROW_CHECKSUMS, **FILE_CHECKSUMS}),
    "transform_with_state_named_avro": Shape("transform_with_state", "rocksdb_changelog",
                                             USER_ACTIVITY, {**NAMED, **AVRO}),
}
NAMES = list(CORPUS)
# make test: the HDFS-backed provider, RocksDB with and without changelogs, a join, checkpoint
# format v2, and transformWithState's variables and timers in Avro; make test-extended: the rest.
CORE_NAMES = {"dedup", "session_window", "join_format_v2", "transform_with_state_avro",
              "window_agg_named", "join_every_new_option"}
SHAPES = tiers.tiered(NAMES, CORE_NAMES)


@dataclass
class Built:
    """A corpus checkpoint, alone in its folder, with its files' checksums and Spark's row counts
    as it was written."""
    shape: Shape
    run: DemoRun
    folder: Path
    checksums: dict
    counts: dict

    def checkpoint(self, spark) -> Checkpoint:
        return Checkpoint(spark, self.run.checkpoint_path)


def _reader(spark, path: str, options: dict):
    reader = spark.read.format("statestore")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(path)


def spark_counts(spark, shape: Shape, path: str) -> dict[str, int]:
    """Rows per unit from Spark's reader, with the options written out by hand (a v2 checkpoint
    with the session set for v2 by hand: its logs do not pin the format)."""
    conf = {k: v for k, v in shape.conf.items() if k == CHECKPOINT_FORMAT_CONF}
    with session_conf(spark, conf):
        return {label: _reader(spark, path, options).count()
                for label, options in shape.units.items()}


@pytest.fixture(scope="module")
def corpus(spark, tmp_path_factory):
    """``corpus(name)`` -> Built: each shape written once per module, then left alone (a test that
    changes files copies it first)."""
    cache = {}

    def get(name: str) -> Built:
        if name not in cache:
            shape = CORPUS[name]
            folder = tmp_path_factory.mktemp(f"corpus-{name}")
            run = build_demo_checkpoint(spark, shape.workload, str(folder / "checkpoint"),
                                        shape.batches, shape.provider, ROWS_PER_BATCH,
                                        PARTITIONS, extra_conf=shape.conf)
            assert run.provider == shape.provider
            age(run.checkpoint_path)  # a stopped query's checkpoint (file times only)
            counts = spark_counts(spark, shape, run.checkpoint_path)
            assert counts and all(counts.values()), counts
            cache[name] = Built(shape, run, folder,
                                tree_checksums(spark, run.checkpoint_path), counts)
        return cache[name]
    return get


def _summary(spark, runbook: str, ckpt: Checkpoint) -> Summary:
    return Summary(runbook, ckpt.root, spark.version)


def _unchanged(spark, built: Built) -> None:
    """Not a byte of the checkpoint changed, and nothing was written beside it."""
    assert tree_checksums(spark, built.run.checkpoint_path) == built.checksums
    assert sorted(os.listdir(built.folder)) == ["checkpoint"]


# -- every runbook on every healthy shape ----------------------------------------------------------
@pytest.mark.parametrize("name", SHAPES)
def test_03_counts_every_unit_as_spark_reads_it_and_calls_nothing_critical(spark, corpus, name):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    # The notebook's calls, in its order.
    inspect_state.operators_table(ckpt)
    inspect_state.operator_lines(ckpt)
    inspect_state.units_table(ckpt)
    reports = inspect_state.inspect_stores(ckpt, -1, -1, "", 5)
    assert [(r.label, r.reader_error_class) for r in reports if not r.readable] == []
    assert {r.label: r.rows for r in reports} == built.counts
    v2 = built.shape.conf.get(CHECKPOINT_FORMAT_CONF) == "2"
    assert ckpt.format_version == (2 if v2 else 1)
    assert all(f.unique_id for f in ckpt.state_files()) == v2
    inspect_state.stores_table(reports)
    reader = inspect_state.reader_lines(reports, ckpt)
    # Avro-encoded state says its files hold Avro bytes, not UnsafeRow; no other shape says so.
    avro = built.shape.conf.items() >= AVRO.items()
    assert any("Avro-encoded" in line for line in reader) == avro, reader
    inspect_state.hot_keys_lines(reports)
    growth = state_growth.growth(ckpt, -1, "", 12, reports)
    state_growth.method_lines(growth)
    inspect_state.expiry_lines(reports)
    checklist = inspect_state.production_checklist(ckpt, reports, growth)
    lines = inspect_state.checklist_lines(checklist)
    summary = _summary(spark, "inspect_state", ckpt)
    inspect_state.summarize(summary, inspect_state.Inspection(reports, growth, checklist))
    assert {i.details["status"] for i in checklist} <= {"pass", "info", "warn"}, lines
    assert summary.status != "critical", (lines, summary.findings)
    # A watermark item passes only where the watermark evicts some of this state.
    (watermark,) = [i for i in checklist if i.details["item"] == "Watermark"]
    by_watermark = any(r.expiry_rule in WATERMARK_RULES for r in reports)
    assert watermark.details["status"] != "pass" or by_watermark, watermark


@pytest.mark.parametrize("name", SHAPES)
def test_02_measures_every_unit(spark, corpus, name):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    measured = sizing.measure_checkpoint(ckpt, restarted_each_batch=True)
    assert not measured.unreadable, measured.lines()
    stores = measured.stores
    assert {m.label: m.rows for m in stores} == built.counts
    assert sum(m.rows for m in stores) == sum(built.counts.values())
    # The notebook's calls after the measurement (no napkin: not the demo).
    sizing.stores_table(stores)
    sizing.partitions_table(stores)
    sizing.estimate_lines(stores, True, ckpt.provider_kind)
    growth = sizing.growth(ckpt, measured)
    projection = sizing.project(growth, stores, 100)
    assert sizing.recommendation_lines(None, stores, projection, ckpt)
    summary = _summary(spark, "estimate_state_size", ckpt)
    sizing.summarize(summary, sizing.Sizing(None, measured, True, growth, projection, ckpt))
    per_store = summary.details["measured"]["per_store"]
    assert sorted(e["unit"] for e in per_store) == sorted(built.counts)
    # Each store folder's files once, whatever the units it holds (a join in state format 3, the
    # variables of transformWithState).
    folders = {(m.operator_id, m.report.files_store) for m in stores}
    assert summary.details["measured"]["disk_bytes"]["retained"] == sum(
        ckpt.disk_bytes(op, store)["retained_bytes"] for op, store in folders)
    if any("stateVarName" in options for options in built.shape.units.values()):
        named = {e["unit"]: e.get("state_variable") for e in per_store}
        assert all(named.values()), named
        assert {u: v for u, v in named.items() if u != "0/timers"} == {
            u: u.split("/", 1)[1] for u in named if u != "0/timers"}


@pytest.mark.parametrize("name", SHAPES)
def test_05_finds_nothing_broken_and_plans_nothing(spark, corpus, name):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    diag = recovery.diagnose(ckpt)
    for lines in (diag.activity_lines, lambda: recovery.structure_lines(diag),
                  lambda: recovery.load_lines(diag), lambda: recovery.bisection_lines(diag),
                  lambda: recovery.options_lines(diag)):
        lines()
    plan = recovery.plan_rollback(ckpt, diag)
    recovery.plan_lines(plan)
    summary = _summary(spark, "recover_corrupted_state", ckpt)
    recovery.summarize(summary, recovery.Recovery(diag, plan))
    assert diag.nothing_broken, (recovery.problem_lines(diag), recovery.load_lines(diag))
    assert plan.moves == [], recovery.plan_lines(plan)
    assert summary.status != "critical", summary.findings


# The shapes each runbook's offline rewrite handles (RocksDB, a family verified on this Spark, join
# state format 2): the others are refused, in one line.
REPARTITIONED = {"dedup", "join", "join_format_v2", "two_operators", "join_named",
                 "dedup_row_checksums", "join_every_new_option"}
NOT_REWRITTEN = {"dedup_within_watermark", "join_v3", "pandas_with_state", "limit"}


@pytest.mark.parametrize("name", SHAPES)
def test_07_dry_run_plans_or_refuses_in_one_line_and_writes_nothing(spark, corpus, name):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    try:  # the notebook's calls with its defaults (num_partitions=0: twice the count, dry run)
        checks = rp.check_requirements(ckpt, 0)
        before, after = checks.num_partitions_before, checks.num_partitions_after
        scans = scan_state(ckpt, ckpt.last_committed_batch_id, before, after)
        rp.forecast_lines(scans, before, after)
        rp.requirement_lines(checks, skip=("stopped",))
        if checks.spark_cannot:
            rp.alternatives_lines(ckpt, checks)
        rp.requirement_lines(checks, only=("stopped",))
        outcome = rp.repartition(ckpt, 0, checks=checks, before=scans)
        rp.summarize(_summary(spark, "repartition_state", ckpt), outcome)
    except RunbookError as exc:
        _unchanged(spark, built)
        assert name not in REPARTITIONED and "\n" not in str(exc), str(exc)
        return
    _unchanged(spark, built)
    assert not outcome.applied and (before, after) == (PARTITIONS, 2 * PARTITIONS)
    assert {s.label: s.rows for s in scans} == built.counts
    supported = checks.get("provider").ok and checks.get("operators").ok
    assert supported == (name in REPARTITIONED), rp.requirement_lines(checks)
    if supported:
        assert outcome.refused is None, outcome.lines
        assert all(s.after is not None and sum(s.after) == s.rows for s in scans)
    else:
        assert outcome.refused and "\n" not in outcome.refused


@pytest.mark.parametrize("name", SHAPES)
def test_09_dry_run_plans_or_refuses_in_one_line_and_writes_nothing(spark, corpus, name,
                                                                    tmp_path):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    output = str(tmp_path / "rewritten")  # a new location: the checkpoint is only read
    rs.pinned_lines(ckpt)
    checks = rs.check_requirements(ckpt, "rocksdb", "", output)
    plan = None if checks.spark_cannot else plan_rewrite(ckpt, "")
    rs.plan_lines(checks, plan)
    rs.requirement_lines(checks, skip=("stopped",))
    if checks.spark_cannot:
        rs.alternatives_lines(ckpt, checks)
    rs.requirement_lines(checks, only=("stopped",))
    outcome = rs.rewrite(ckpt, "rocksdb", "", output, checks=checks, plan=plan)
    rs.summarize(_summary(spark, "rewrite_state", ckpt), outcome)
    assert not outcome.applied and outcome.dry_run
    assert checks.spark_cannot == (name in NOT_REWRITTEN), rs.requirement_lines(checks)
    # Every corpus checkpoint is committed; a v2 one is refused for its format, by that name.
    assert checks.get("committed").ok, rs.requirement_lines(checks)
    assert checks.get("format").ok == (ckpt.format_version == 1)
    assert outcome.refused is None or "\n" not in outcome.refused
    if plan is not None:
        assert plan.rows_before == plan.rows_after == built.counts
    assert not os.path.exists(output)
    _unchanged(spark, built)


@pytest.mark.parametrize("name", SHAPES)
def test_01_names_the_pinned_provider(spark, corpus, name):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    rocksdb = provider_classes().rocksdb
    report = er.check_checkpoint(ckpt, rocksdb)
    pinned = provider_conf(built.shape.provider)[PROVIDER_CONF]
    last = ckpt.offset_batch_ids[-1]
    assert (report.pinned_provider_class, report.pinned_in) == (pinned, f"offsets/{last}")
    assert report.pinned_matches == (pinned == rocksdb)
    assert report.changelog_newest_version == {"hdfs": None, "rocksdb": False,
                                               "rocksdb_changelog": True}[built.shape.provider]
    assert er.checkpoint_lines(report)[0] == f"Pinned in offsets/{last}: {pinned}"
    assert er.options_lines(report)


# The job as it runs, for 08 and 10: the demo query with the settings the shape was written with.
JOB = """
from state_runbooks.demos.checkpoints import WORKLOAD_OUTPUT_MODE, demo_query

def build(spark):
    for key, value in CONF.items():
        spark.conf.set(key, value)
    return (demo_query(spark, WORKLOAD, ROWS).writeStream
            .outputMode(WORKLOAD_OUTPUT_MODE.get(WORKLOAD, "append")))
"""


def unchanged_job(built: Built, folder: Path) -> str:
    path = folder / f"{built.shape.workload}_job.py"
    path.write_text(f"WORKLOAD = {built.shape.workload!r}\nCONF = {built.shape.conf!r}\n"
                    f"ROWS = {ROWS_PER_BATCH}\n" + JOB)
    return str(path)


@pytest.mark.parametrize("name", SHAPES)
def test_08_says_the_unchanged_job_restarts(spark, corpus, name, tmp_path):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    job = qc.load_job(spark, unchanged_job(built, tmp_path), "build")
    check = qc.check_query_change(spark, ckpt, job, scratch_dir=str(tmp_path / "scratch"))
    lines = qc.side_by_side_lines(check) + qc.rehearsal_lines(check)
    assert check.rehearsed and (check.restart, check.status) == ("restarts", "ok"), lines
    sources = [r for r in check.comparison.rows if r.aspect.startswith("source")]
    assert sources and {r.verdict for r in sources} == {"same"}, lines
    _unchanged(spark, built)


RENAMED_JOB = """
from state_runbooks.common.spark_settings import SOURCE_EVOLUTION_CONF
from state_runbooks.demos.checkpoints import _events, _window_agg

def renamed(spark):
    spark.conf.set(SOURCE_EVOLUTION_CONF, "true")
    return _window_agg(_events(spark, ROWS, name="clicks")).writeStream.outputMode("append")
"""


def test_08_a_renamed_source_under_source_evolution_restarts_from_its_own_start(spark, corpus,
                                                                                tmp_path):
    """Spark's supported way to swap a source: under source evolution a source of a new name
    starts from its starting offsets and the old name's position is dropped. 08 says so, and the
    rehearsal and a real restart on a copy show it."""
    built = corpus("window_agg_named")
    ckpt = built.checkpoint(spark)
    job_file = tmp_path / "renamed_job.py"
    job_file.write_text(f"ROWS = {ROWS_PER_BATCH}\n" + RENAMED_JOB)
    job = qc.load_job(spark, str(job_file), "renamed")
    check = qc.check_query_change(spark, ckpt, job, scratch_dir=str(tmp_path / "scratch"))
    lines = qc.side_by_side_lines(check) + qc.rehearsal_lines(check)
    assert check.rehearsed and (check.restart, check.status) == ("restarts", "warning"), lines
    sources = {r.aspect: r for r in check.comparison.rows if r.aspect.startswith("source")}
    text = " ".join(f"{aspect} {r.old} {r.new} {r.rule}" for aspect, r in sources.items())
    assert {r.verdict for r in sources.values()} == {"changes"}, lines
    assert "events" in text and "clicks" in text and "starting offsets" in text, lines
    _unchanged(spark, built)
    # For real, on a copy: the next entry holds the new name alone, from the source's start.
    copy = tmp_path / "restarted"
    shutil.copytree(built.run.checkpoint_path, copy)
    (job.df.writeStream.format("noop").option("checkpointLocation", str(copy))
     .trigger(availableNow=True).start().awaitTermination())
    restarted = Checkpoint(spark, str(copy))
    newest = restarted.offsets(restarted.offset_batch_ids[-1])
    assert newest.source_names == ("clicks",)
    assert newest.sources[0]["offset"] == ROWS_PER_BATCH  # its first batch: rows 0..9


@pytest.mark.parametrize("name", SHAPES)
def test_10_dry_run_of_the_unchanged_job_migrates_nothing(spark, corpus, name, tmp_path):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    job = ms.load_job(spark, unchanged_job(built, tmp_path), "build")
    change = ms.compare_schemas(spark, ckpt, job, {})
    try:
        checks = ms.check_requirements(ckpt, change, "", "")
        plan, checks = ms.plan_unless_active(ckpt, checks, change, {})
        out = ms.migrate(ckpt, checks, change, plan, {}, job)
    finally:
        change.remove_fresh()
    assert not out.applied, out.lines
    assert not any(store.changed for store in change.stores), ms.schema_lines(change)
    _unchanged(spark, built)


def _move(spark, built: Built, tmp_path: Path, move: str, **kw):
    ckpt = built.checkpoint(spark)
    job = mc.load_job(spark, unchanged_job(built, tmp_path), "build")
    moves = mc.compare_move(spark, ckpt, job, kw.pop("source", ""), move)
    checks = mc.check_requirements(spark, ckpt, moves, move, **kw)
    return checks, mc.move(ckpt, checks, job, dry_run=False)


@pytest.mark.parametrize("name", SHAPES)
def test_12_moves_every_shape_to_a_new_place_and_spark_restarts_there(spark, corpus, name,
                                                                      tmp_path):
    """Every file copied and compared, every path operator metadata names rewritten to the new
    place (across a space in it), and the job restarted there for a batch."""
    built = corpus(name)
    target = tmp_path / "new place" / "checkpoint"
    checks, out = _move(spark, built, tmp_path, "location", output_path=str(target))
    assert checks.ok and out.verified, mc.requirement_lines(checks) + out.lines
    assert out.rehearsal.rehearsal.ran, out.lines
    moved = Checkpoint(spark, str(target))
    assert not [n for n in moved.fs.walk() if "query-change" in n]
    from state_runbooks.core.named_locations import elsewhere
    assert elsewhere(moved.fs) == []
    _unchanged(spark, built)


# make test: a deduplication, a join on checkpoint format 2, a session window and named sources
# (refused); the relocation above runs every core shape.
SOURCE_MOVE_SHAPES = tiers.tiered(NAMES, {"dedup", "join_format_v2", "session_window",
                                          "window_agg_named"})


@pytest.mark.parametrize("name", SOURCE_MOVE_SHAPES)
def test_12_starts_every_shape_s_source_again_keeping_the_state(spark, corpus, name, tmp_path):
    """The rate-micro-batch source started again from its first row (``start_at=earliest``) at a
    new location: the job restarts with every state file as it was and reads one batch of rows,
    whose event times lie behind the carried watermark (counted as late where the operator
    drops late rows). With named sources (offsets log format 2) Spark's own source evolution is
    the way: refused in one line."""
    built = corpus(name)
    target = tmp_path / "moved"
    checks, out = _move(spark, built, tmp_path, "source", source="0", start_at="earliest",
                        output_path=str(target))
    if SOURCE_EVOLUTION_CONF in built.shape.conf:
        assert [r.name for r in checks.blocking] == ["sources", "start"]
        assert "source evolution" in out.refused and "\n" not in out.refused
        assert any(line.startswith("Spark's source evolution, rehearsed on a copy: the job "
                                   "restarts") for line in out.lines), out.lines
        assert not target.exists()
    else:
        assert checks.ok and out.verified, mc.requirement_lines(checks) + out.lines
        assert out.rehearsal.sources[0].rows_read == ROWS_PER_BATCH
        original = built.checkpoint(spark)
        # Every state file as it was (operator metadata v2 names its schema files by path: the
        # one file rewritten to the new place).
        state = [r for r in original.fs.raw().walk() if r.startswith("state/")
                 and "/_metadata/v2/" not in r]
        moved = Checkpoint(spark, str(target)).fs.raw()
        assert all(moved.sha256(r) == original.fs.raw().sha256(r) for r in state)
    _unchanged(spark, built)


def test_12_a_copy_still_naming_its_old_place_is_rewritten_in_place_and_undone(spark, corpus,
                                                                               tmp_path):
    """transformWithState's operator metadata names its schema files by absolute path: a copy
    made with the operating system still names the original. Moved in place (no output_path),
    only those files are rewritten, with backup and journal; Spark restarts the copy; undo gives
    back the same bytes."""
    from state_runbooks.core.named_locations import elsewhere
    built = corpus("transform_with_state_avro")
    copy = tmp_path / "copied" / "checkpoint"
    shutil.copytree(built.run.checkpoint_path, copy)
    ckpt = Checkpoint(spark, str(copy))
    assert elsewhere(ckpt.fs)
    before = tree_checksums(spark, str(copy))
    job = mc.load_job(spark, unchanged_job(built, tmp_path), "build")
    checks = mc.check_requirements(spark, ckpt, mc.compare_move(spark, ckpt, job, move="location"),
                                   "location")
    out = mc.move(ckpt, checks, job, dry_run=False)
    assert out.verified and out.rewritten and all("/_metadata/v2/" in f for f in out.rewritten)
    assert elsewhere(ckpt.refresh().fs) == []
    back = mc.undo(ckpt.refresh(), out.journal_path, dry_run=False, force=True)
    assert back.verified and tree_checksums(spark, str(copy)) == before
    _unchanged(spark, built)


@pytest.mark.parametrize("name", SHAPES)
def test_11_traces_a_key_as_the_reader_shows_it(spark, corpus, name):
    built = corpus(name)
    ckpt = built.checkpoint(spark)
    unit = next(u for u in state_units(ckpt) if u.kind != "timers")
    key = read_unit(ckpt, unit).select("key").first().key
    key_where = tk.key_where_for(key)
    trace = tk.trace_key(ckpt, key_where, unit.operator_id, unit.state_variable or unit.store_name)
    mine = next(t for t in trace.traces if t.label == unit.label)
    last = ckpt.retained_batch_range(unit.operator_id)[1]
    assert mine.by_batch[last] and trace.status.status == "present", tk.history_lines(trace)
    assert not trace.disagreements()
    _unchanged(spark, built)


# -- five damages: diagnosed, rolled back, restarted to a never-broken state, undone -------------
def _zip_ssts(path: Path) -> set[str]:
    """The SST files a RocksDB snapshot zip lists (its metadata file, read here directly)."""
    with zipfile.ZipFile(path) as archive:
        text = archive.read("metadata").decode()
    return {s["dfsSstFileName"] for s in json.loads(text.split("\n", 1)[1])["sstFiles"]}


def _version(rel: str) -> int | None:
    """The state version of a state data file (``<version>.delta|snapshot|zip|changelog``)."""
    name = rel.rsplit("/", 1)[-1]
    stem, _, ext = name.partition(".")
    return int(stem) if rel.startswith("state/") and stem.isdigit() and ext in (
        "delta", "snapshot", "zip", "changelog") else None


def _zips(root: Path) -> dict[str, int]:
    return {rel: _version(rel) for rel in tree_sha(root) if rel.endswith(".zip") and _version(rel)}


# Each damage is made on a copy and returns the path 05 must name.
def truncate_delta(root: Path, ckpt: Checkpoint) -> str:
    """The newest delta of partition 0 cut to half its bytes."""
    return faults.inject_fault(ckpt, "truncate_latest")


def garbage_in_changelog(root: Path, ckpt: Checkpoint) -> str:
    """Noise over the middle of version 2's changelog of partition 0 (length kept, .crc left as
    it was): every later version replays it."""
    rel = "state/0/0/2.changelog"
    data = bytearray((root / rel).read_bytes())
    middle = len(data) // 2
    data[middle - 8:middle + 8] = b"\xde\xad\xbe\xef" * 4
    (root / rel).write_bytes(bytes(data))
    return rel


def delete_sst(root: Path, ckpt: Checkpoint) -> str:
    """An SST file of partition 0 that version 2 added and the newest version still lists, gone
    with its .crc sidecar (a lost file)."""
    folder = "state/0/0/left-keyWithIndexToValue"
    lists = {v: _zip_ssts(root / folder / f"{v}.zip") for v in (1, 2, 4)}
    name = sorted((lists[2] - lists[1]) & lists[4])[0]
    rel = f"{folder}/SSTs/{name}"
    (root / rel).unlink()
    (root / folder / "SSTs" / f".{name}.crc").unlink()
    return rel


def delete_newest_commit(root: Path, ckpt: Checkpoint) -> str:
    """The newest commit gone: its batch looks in flight, and 05 names its offsets entry."""
    broken = faults.inject_log_fault(ckpt, "commits_latest", "missing")
    return f"offsets/{broken.rsplit('/', 1)[1]}"


def delete_newest_offsets(root: Path, ckpt: Checkpoint) -> str:
    """The newest offsets entry gone: 05 names the commit left without it."""
    broken = faults.inject_log_fault(ckpt, "offsets_latest", "missing")
    return f"commits/{broken.rsplit('/', 1)[1]}"


def garbage_in_named_offsets(root: Path, ckpt: Checkpoint) -> str:
    """The newest offsets entry of a format 2 log overwritten with noise: still named."""
    return faults.inject_log_fault(ckpt, "offsets_latest", "garbage")


def name_lost_in_offsets(root: Path, ckpt: Checkpoint) -> str:
    """The newest offsets entry of a format 2 log with its source line's name cut off (a
    format 1 line in a format 2 entry: Spark refuses it, ``Invalid OffsetMap format``)."""
    rel = f"offsets/{ckpt.offset_batch_ids[-1]}"
    lines = (root / rel).read_text().split("\n")
    (root / rel).write_text("\n".join(lines[:2] + [line.partition(":")[2] for line in lines[2:]]))
    return rel


ROLLBACK = "rollback"  # the logs after the last good batch and the state after its version
# damage -> (corpus shape, how it is made, the last batch whose state loads, the smallest plan:
# ROLLBACK, or exactly the files to move)
DAMAGES = {
    "truncated_delta": ("window_agg", truncate_delta, 2, ROLLBACK),
    "garbage_in_mid_changelog": ("dedup", garbage_in_changelog, 0, ROLLBACK),
    "deleted_sst": ("join", delete_sst, 0, ROLLBACK),
    # Spark re-runs a batch in flight from its offsets entry by itself: nothing to move.
    "deleted_newest_commit": ("transform_with_state_pandas", delete_newest_commit, 2, []),
    # Spark refuses a commit without offsets: it goes, and Spark re-runs the batch.
    "deleted_newest_offsets": ("session_window", delete_newest_offsets, 2, ["commits/3"]),
    # Offsets log format 2: Spark re-runs the batch from the entry before.
    "garbage_in_named_offsets": ("window_agg_named", garbage_in_named_offsets, 2,
                                 ["commits/3", "offsets/3"]),
    "name_lost_in_offsets": ("window_agg_named", name_lost_in_offsets, 2,
                             ["commits/3", "offsets/3"]),
}


def rollback_files(root: Path, target: int) -> tuple[set[str], set[str]]:
    """What a rollback to ``target`` must move (the logs of later batches, the state files of later
    versions), and what it may move besides: SST files no kept version lists."""
    files = [rel for rel in tree_sha(root) if not rel.rsplit("/", 1)[-1].startswith(".")]
    later_logs = {rel for rel in files if rel.split("/")[0] in ("offsets", "commits")
                  and int(rel.split("/")[1]) > target}
    later_state = {rel for rel in files if (_version(rel) or 0) > target + 1}
    kept = set()
    for rel, version in _zips(root).items():
        if version <= target + 1:
            folder = rel.rsplit("/", 1)[0]
            kept |= {f"{folder}/SSTs/{n}" for n in _zip_ssts(root / rel)}
    unused = {rel for rel in files if rel.endswith(".sst") and rel not in kept}
    return later_logs | later_state, unused


# make test: the damages to the core shapes; make test-extended: the others.
@pytest.mark.parametrize("damage", tiers.tiered(
    list(DAMAGES), {d for d, (name, *_) in DAMAGES.items() if name in CORE_NAMES}))
def test_05_repairs_a_damaged_shape_and_the_restart_equals_a_clean_run(spark, corpus, tmp_path,
                                                                       damage):
    name, inject, last_good, smallest = DAMAGES[damage]
    run = corpus(name).run
    last = run.batches - 1
    clean = clean_checkpoints(spark, run, tmp_path / "clean", last)  # a run that never broke
    root = tmp_path / "checkpoint"
    shutil.copytree(run.checkpoint_path, root)
    ckpt = Checkpoint(spark, str(root))
    named = inject(root, ckpt)
    ckpt.refresh()
    age(root)
    damaged = tree_sha(root)

    diag = recovery.diagnose(ckpt)
    assert named in [p.path for p in diag.problems], recovery.problem_lines(diag)
    plan = recovery.plan_rollback(ckpt, diag)
    lines = recovery.plan_lines(plan)
    assert plan.target_batch_id == last_good, lines
    if smallest == ROLLBACK:
        must, may = rollback_files(root, last_good)
        assert must <= set(plan.moves) <= must | may, lines
    else:
        assert plan.moves == smallest, lines
    assert not recovery.rollback(ckpt, plan).applied and tree_sha(root) == damaged  # dry run

    backup = tmp_path / "backup"
    outcome = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(backup))
    if plan.moves:
        assert outcome.applied and outcome.verified, outcome.lines
    else:
        assert not outcome.applied and not backup.exists() and tree_sha(root) == damaged
    # Each start runs one new batch, after re-running a batch left in flight.
    faults.restart_demo(spark, run, str(root), last - last_good)
    restarted = Checkpoint(spark, str(root))
    until = restarted.last_committed_batch_id
    assert until == (last if plan.moves else last + 1)
    assert state_differences(spark, restarted, until, clean[until]) == []
    if not plan.moves:
        return  # nothing was changed: nothing to undo

    # force: the restarted query wrote its batches seconds ago (it has stopped)
    undone = recovery.undo(restarted, outcome.journal_path, dry_run=False, force=True)
    assert undone.applied and undone.verified, undone.lines
    assert tree_sha(root) == damaged


# -- a change keeps the checkpoint's form ---------------------------------------------------------
def _form(root: Path) -> tuple:
    """The offsets log's format of every entry, and the settings the newest one pins that give the
    state its form (row checksums, encoding, named sources)."""
    from state_runbooks.core import offset_log
    entries = {int(p.name): offset_log.parse(p.read_bytes()) for p in (root / "offsets").iterdir()
               if p.name.isdigit()}
    conf = entries[max(entries)].metadata["conf"]
    keys = (ROW_CHECKSUM_CONF, SOURCE_EVOLUTION_CONF, *AVRO)
    return {e.version for e in entries.values()}, {k: conf.get(k) for k in keys}


def _repartition(spark, ckpt: Checkpoint, backup: Path):
    return rp.repartition(ckpt, PARTITIONS + 1, dry_run=False, backup_dir=str(backup))


def _drop_a_key(spark, ckpt: Checkpoint, backup: Path):
    key = read_unit(ckpt, state_units(ckpt)[0]).select("key").first().key
    return rs.rewrite(ckpt, "", tk.key_where_for(key), dry_run=False, backup_dir=str(backup))


# make test: the repartition of the shape with every option; make test-extended: the others.
CHANGES = [tiers.case("join_every_new_option", _repartition, core=True, id="07-every-option"),
           tiers.case("join_named", _repartition, core=False, id="07-named"),
           tiers.case("dedup_row_checksums", _drop_a_key, core=False, id="09-row-checksums")]


@pytest.mark.parametrize("name,change", CHANGES)
def test_a_change_keeps_the_form_and_spark_restarts_on_it(spark, corpus, tmp_path, name, change):
    """What 07 and 09 write into a checkpoint keeps its form (the offsets log's format, row
    checksums): Spark restarts the query on the result and reads every row back (with row
    checksums on, a restart verifies them as it loads the state), and the undo gives back the
    checkpoint byte for byte."""
    run = corpus(name).run
    root, reference = tmp_path / "checkpoint", tmp_path / "never-changed"
    shutil.copytree(run.checkpoint_path, root)
    shutil.copytree(run.checkpoint_path, reference)
    age(root)
    before, form = tree_sha(root), _form(root)
    ckpt = Checkpoint(spark, str(root))
    done = change(spark, ckpt, tmp_path / "backup")
    assert done.applied and done.verified, done.lines
    assert _form(root) == form
    faults.restart_demo(spark, run, str(root), 1)  # Spark loads the changed state and goes on
    restarted = Checkpoint(spark, str(root))
    assert restarted.last_committed_batch_id == run.batches + 1  # the change's batch, one more
    assert _form(root) == form
    faults.restart_demo(spark, run, str(reference), 1)  # the same input, never changed
    with session_conf(spark, {k: v for k, v in run.extra_conf.items()
                              if k == CHECKPOINT_FORMAT_CONF}):  # the reader's format 2 setting
        ours, theirs = reader_rows(spark, str(root)), reader_rows(spark, str(reference))
    if change is _repartition:  # every row kept, on other partitions
        assert ours == theirs
    else:  # the dropped key's rows gone, the rest kept
        assert all(set(ours[u]) < set(theirs[u]) for u in theirs), (ours, theirs)
    undone = (rp if change is _repartition else rs).undo(restarted, done.journal_path,
                                                         dry_run=False, force=True)
    assert undone.applied and undone.verified, undone.lines
    assert tree_sha(root) == before


# -- what this Spark does not write -----------------------------------------------------------------
def test_real_time_mode_needs_a_source_no_local_query_has(spark, tmp_path):
    """Real-time mode (``trigger(realTime=...)``) runs only on sources that support it (Kafka):
    the rate sources the corpus is written with are refused, so no corpus checkpoint is a real-time
    one; ``join_every_new_option`` has what real-time mode forces on a stateful query instead."""
    from pyspark.sql import functions as F
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
          .groupBy((F.col("value") % 3).alias("k")).count())
    with pytest.raises(Exception, match="STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED"):
        query = (df.writeStream.format("console").outputMode("update")
                 .option("checkpointLocation", str(tmp_path / "rtm"))
                 .trigger(realTime="5 seconds").start())
        try:
            query.awaitTermination(60)
        finally:
            query.stop()


def test_source_evolution_on_a_format_1_checkpoint_is_spark_s_refusal(spark, corpus, tmp_path):
    """Named sources cannot be switched on for a checkpoint started without them on this Spark
    (an offsets log in format 1 stays in format 1): there is no upgraded log to read here."""
    built = corpus("window_agg")
    copy = tmp_path / "checkpoint"
    shutil.copytree(built.run.checkpoint_path, copy)
    with pytest.raises(RunbookError, match="CANNOT_ENABLE_ON_EXISTING_CHECKPOINT"):
        faults.restart_demo(spark, DemoRun(str(copy), built.run.workload, built.run.provider, 1,
                                           ROWS_PER_BATCH, PARTITIONS, extra_conf=NAMED),
                            str(copy), 1)


@pytest.mark.parametrize("name", SHAPES)
def test_13_gives_each_shape_the_status_03_and_05_give_it(spark, corpus, name):
    """One fleet run over the shape's folder: the one checkpoint found, nothing broken as 05
    says, every unit's rows as Spark's reader counts them, and 03's warnings and no other."""
    built = corpus(name)
    run = fleet.run_fleet(spark, str(built.folder), state_rows="exact")
    (exam,) = run.examinations
    ckpt = built.checkpoint(spark)
    reports = inspect_state.inspect_stores(ckpt)
    warned = {i.code for i in inspect_state.production_checklist(ckpt, reports, None)
              if i.severity == "warning"} - {"state_not_loaded", "retention", "changelog",
                                             "monitoring"}
    assert exam.status == ("warning" if warned else "ok"), (exam.findings, exam.not_judged)
    assert {f.code for f in exam.findings if f.severity == "warning"} == warned
    assert exam.figures["state_loads"] is True
    assert exam.figures["rows"] == sum(r.rows for r in reports)
    assert exam.figures["files_from"] == "Spark's job over the fleet"
    listed = partition_figures(ckpt.partition_files())  # the driver's listing: the same figures
    assert {k: exam.figures[k] for k in listed} == listed


# -- last in the module ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", SHAPES)
def test_zz_no_runbook_wrote_a_byte(spark, corpus, name):
    """After every test above, each corpus checkpoint is as it was written."""
    _unchanged(spark, corpus(name))
