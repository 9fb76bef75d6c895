"""04_diagnose_join_mismatch: every key of the demo joins classified as constructed.

The join demo builds each mismatch on purpose (``demo.JOIN_CASES``, by ``value % 10``), so every
key's true category follows from the construction: ``expected`` below derives it, case by case,
without Spark. A row that never finds its match is evicted 7 batches after it arrived (2 s watermark
delay, 3 s bound, the watermark one batch behind); the first batch's late payments, which enter the
state while the watermark is still 0, are evicted in the next batch.
"""
from __future__ import annotations

import json

import papermill
import pytest
import tiers
from messages import one_line

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.formatting import format_utc
from state_runbooks.common.spark_settings import WATERMARK_DELAY_METADATA
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_reader import read_state
from state_runbooks.demos.checkpoints import (
    JOIN_DEMO_BATCHES,
    JOIN_LOWER_BOUND_SECONDS,
    JOIN_PAYMENT_EARLY_BATCHES,
    JOIN_UPPER_BOUND_SECONDS,
    demo_query,
    join_demo_key,
    provider_conf,
)
from state_runbooks.runbooks import diagnose_join_mismatch as jd
from state_runbooks.session.spark_session import session_conf

ROWS = 20
LAST = JOIN_DEMO_BATCHES - 1
EVICTED_AFTER = 7  # batches an unmatched row stays in the state
BOUNDS = {"lower_bound_seconds": JOIN_LOWER_BOUND_SECONDS,
          "upper_bound_seconds": JOIN_UPPER_BOUND_SECONDS}


def expected(batch: int, composite: bool = False, rows: int = ROWS) -> tuple[dict, set]:
    """``({key: category}, never_seen keys)`` at ``batch`` for the join demo, from its cases."""
    out, never = {}, set()
    early = JOIN_PAYMENT_EARLY_BATCHES

    def key(order: int | str, customer: int):
        name = order if isinstance(order, str) else f"ord-{order}"
        return (name, f"cust-{customer % 5}") if composite else name

    def waiting(k: int, side: str) -> str:  # one side only, arrived in batch k
        return f"waiting_for_{side}" if batch < k + EVICTED_AFTER else "evicted_by_watermark"

    for k in range(batch + 1):
        for v in range(k * rows, (k + 1) * rows):
            case = v % 10
            if case == 0:  # the payment names a missing order; the order gets none
                out[key(v, v)] = waiting(k, "right")
                out[key(f"missing-{v}", v)] = waiting(k, "left")
            elif case == 1:  # the payment comes `early` batches before its order
                out[key(v, v)] = "joined" if k >= early else waiting(k, "right")
                if k + early > batch:
                    out[key(v + early * rows, v + early * rows)] = waiting(k, "left")
            elif case == 2:
                out[key(v, v)] = "outside_time_bounds"
            elif case == 3:  # order filtered upstream, payment late: in the state in batch 0 only
                if k == 0:
                    out[key(v, v)] = waiting(0, "left") if batch == 0 else "evicted_by_watermark"
                else:
                    never.add(key(v, v))
            elif case == 4:  # its payment went to the next order
                out[key(v, v)] = waiting(k, "right")
            elif case == 6 and composite:  # the payment carries the next customer
                out[key(v, v)] = waiting(k, "right")
                out[key(v, v + 1)] = waiting(k, "left")
            else:
                out[key(v, v)] = "joined"
    return out, never


def categories(diagnosis) -> dict:
    cols = [f"k_{f}" for f in diagnosis.spec.key_fields]
    rows = diagnosis.per_key.select(*cols, "category").collect()
    if len(cols) == 1:
        return {r[0]: r["category"] for r in rows}
    return {tuple(r[c] for c in cols): r["category"] for r in rows}


def counts_of(mapping: dict) -> dict:
    out = {c: 0 for c in jd.CATEGORIES}
    for category in mapping.values():
        out[category] += 1
    return out


def diagnose(spark, path, batch_id=-1, **kwargs):
    ckpt = Checkpoint(spark, path)
    spec = jd.resolve_join(ckpt, batch_id=batch_id, **BOUNDS)
    return jd.diagnose(ckpt, spec, batch_id, **kwargs)


@pytest.fixture(scope="module")
def hdfs_demo(demo_factory):
    return demo_factory("join", "hdfs", batches=JOIN_DEMO_BATCHES).checkpoint_path


@pytest.fixture(scope="module")
def changelog_demo(demo_factory):
    return demo_factory("join", "rocksdb_changelog", batches=JOIN_DEMO_BATCHES).checkpoint_path


@pytest.fixture(scope="module")
def composite_demo(demo_factory):
    return demo_factory("join_composite", "hdfs", batches=3).checkpoint_path


@pytest.fixture(scope="module")
def hdfs_diagnosis(spark, hdfs_demo):
    """The demo's last batch, classified once for the tests that only read it."""
    return diagnose(spark, hdfs_demo)


# -- every category on the constructed keys -------------------------------------------------------
@pytest.mark.parametrize("demo", tiers.tiered(  # make test: the demo the other tests share
    ["hdfs", "changelog"], {"hdfs"}))
def test_every_key_as_constructed(spark, request, demo):
    diagnosis = (request.getfixturevalue("hdfs_diagnosis") if demo == "hdfs"
                 else diagnose(spark, request.getfixturevalue("changelog_demo")))
    truth, never = expected(LAST)
    assert diagnosis.method == jd.CHANGE_FEED and diagnosis.batch_id == LAST
    assert categories(diagnosis) == truth
    assert diagnosis.counts == counts_of(truth)
    assert {c for c, n in diagnosis.counts.items() if n} == set(jd.CATEGORIES) - {
        "unmatched_within_bounds", "never_seen"}
    # Which keys are in the state of the batch, as the history says, against the state itself.
    for p, side in (("l", "left"), ("r", "right")):
        said = {r[0] for r in diagnosis.per_key.where(f"{p}_present").select("k_field0").collect()}
        state = read_state(diagnosis.checkpoint, 0, f"{side}-keyWithIndexToValue", LAST)
        assert said == {r[0] for r in state.select("key.field0").distinct().collect()}
    ckpt, spec = diagnosis.checkpoint, diagnosis.spec
    assert _state_from_history(ckpt, spec, LAST) == _state_now(ckpt, spec, LAST)
    # One key of each category, read one by one: the state of the batch agrees with the history.
    shown = diagnosis.examples(1) + diagnosis.verdicts(sorted(never)[:2])
    assert [v.category for v in shown] == [
        c for c in jd.CATEGORIES if c != "unmatched_within_bounds"] + ["never_seen"]
    for verdict in shown:
        assert "warning" not in verdict.evidence, verdict
        for side in ("left", "right"):
            evidence = verdict.evidence[side]
            assert (evidence["rows_now"] > 0) == (evidence["removed_batch"] is None
                                                  and bool(evidence["times"]))


def _state_now(ckpt, spec, batch: int) -> dict:
    """``{(side, key): (rows, earliest, latest event time in ms)}`` as Spark's reader serves the
    state of ``batch``."""
    from pyspark.sql import functions as F
    out = {}
    for p, side in (("l", "left"), ("r", "right")):
        t = F.unix_millis(F.col(f"value.{spec.side(side).time_column}"))
        for r in (read_state(ckpt, 0, f"{side}-keyWithIndexToValue", batch)
                  .groupBy("key.field0").agg(F.count("*"), F.min(t), F.max(t)).collect()):
            out[p, r[0]] = tuple(r[1:])
    return out


def _state_from_history(ckpt, spec, batch: int, start: int = 0) -> dict:
    """The same, as the diagnosis derives it from the change feed."""
    out = {}
    for r in jd.key_history(ckpt, spec, batch, jd.CHANGE_FEED, start).collect():
        for p in ("l", "r"):
            if r[f"{p}_rows_now"]:
                out[p, r["k_field0"]] = (r[f"{p}_rows_now"], r[f"{p}_tmin_now"],
                                         r[f"{p}_tmax_now"])
    return out


def test_the_state_of_the_batch_from_the_change_feed(spark, tmp_path):
    """A key's rows arrive out of time order over three batches, then the watermark evicts them a
    few at a time: Spark moves the last row of the key into each freed slot and checks the moved
    row again, so a slot can take several rows in one batch and keep the last. Each slot's last
    change in the feed, in the order Spark wrote it, is exactly what the state holds: at every
    batch, from batch 0 and on top of a later batch's state."""
    from pyspark.sql import functions as F

    path = str(tmp_path / "moves")
    conf = {"spark.sql.shuffle.partitions": "2",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false",
            **provider_conf("rocksdb_changelog")}

    def side(name: str, shift: int):  # a new key every 3 batches; times -5, 5, 3, 1, -1, -3 s
        value = F.col("value")
        return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 6)
                .option("startTimestamp", 1_700_000_000_000).load()
                .select(F.concat(F.lit("k-"), (F.floor(value / 18) + shift).cast("string"))
                        .alias("k"),
                        (F.col("timestamp") + F.expr("INTERVAL 1 SECONDS") * ((value * 5) % 6 * 2 - 5))
                        .alias(f"{name}_time"))
                .withWatermark(f"{name}_time", "1 seconds"))

    with session_conf(spark, conf):
        # No key of one side on the other: every row waits until the watermark evicts it.
        df = side("order", 0).alias("l").join(side("payment", 100).alias("r"), F.expr(
            "l.k = r.k AND l.order_time >= r.payment_time - INTERVAL 3 SECONDS "
            "AND l.order_time <= r.payment_time + INTERVAL 3 SECONDS"))
        for _ in range(7):
            (df.writeStream.format("noop").option("checkpointLocation", path)
             .trigger(availableNow=True).start().awaitTermination())
    ckpt = Checkpoint(spark, path)
    feed = (spark.read.format("statestore").option("storeName", "left-keyWithIndexToValue")
            .option("readChangeFeed", "true").option("changeStartBatchId", 0).load(path))
    moved = [r[0] for r in feed.groupBy("batch_id", "key").agg(
        F.countDistinct("value.order_time").alias("rows"),
        F.count(F.when(F.col("change_type") == "delete", True)).alias("deletes"))
        .where("rows > 1 AND deletes = 0").select("batch_id").distinct().collect()]
    assert moved  # batches in which a slot took several rows and kept the last
    spec = jd.resolve_join(ckpt, **BOUNDS)
    for batch in sorted({*moved, 6}):
        assert _state_from_history(ckpt, spec, batch) == _state_now(ckpt, spec, batch), batch
    assert _state_from_history(ckpt, spec, 6, start=3) == _state_now(ckpt, spec, 6)


def test_evidence_of_the_classic_cases(hdfs_diagnosis):
    diagnosis = hdfs_diagnosis
    joined, outside, waiting, evicted, late = diagnosis.verdicts([
        join_demo_key("two_payments", LAST), join_demo_key("payment_outside_time_range", LAST),
        join_demo_key("payment_for_missing_order", LAST),
        join_demo_key("payment_for_missing_order", 0, payment=True),
        join_demo_key("order_filtered_payment_late", 0)])
    # Two payments for one order, both matched in the batch they arrived.
    assert joined.evidence["right"]["rows_now"] == 2 and joined.evidence["matched_in_batch"] == LAST
    assert outside.evidence["gap_seconds"] == -8.0
    assert outside.evidence["beyond_bound_seconds"] == 8.0 - JOIN_LOWER_BOUND_SECONDS
    assert waiting.evidence["expires_when_watermark_passes"] == "2023-11-14 22:13:30"
    assert evicted.key == "missing-0" and evicted.evidence["right"]["removed_batch"] == 7
    assert evicted.evidence["right"]["removed_at_watermark"] == "2023-11-14 22:13:24"
    assert late.evidence["right"]["removed_batch"] == 1
    assert late.evidence["right"]["times"] == ["2023-11-14 22:12:50"]
    for verdict in (joined, outside, waiting, evicted, late):
        text = diagnosis.explain(verdict)
        assert text.startswith(f"{verdict.key}: {verdict.category}.") and "\n" not in text
    assert "5 s outside the time condition" in diagnosis.explain(outside)
    assert ("evicted in batch 7, whose watermark was 2023-11-14 22:13:24"
            in diagnosis.explain(evicted))


def test_what_the_checkpoint_records_of_the_join(spark, hdfs_demo):
    """Read by store name, a side shows ``matched`` (by ``joinSide`` it does not); the event-time
    column carries the watermark delay; the join condition is recorded nowhere."""
    ckpt = Checkpoint(spark, hdfs_demo)
    reader = spark.read.format("statestore")
    by_name = reader.option("storeName", "left-keyWithIndexToValue").load(ckpt.root).schema
    by_side = spark.read.format("statestore").option("joinSide", "left").load(ckpt.root).schema
    assert "matched" in by_name["value"].dataType.fieldNames()
    assert "matched" not in by_side["value"].dataType.fieldNames()
    assert by_name["value"].dataType["order_time"].metadata == {WATERMARK_DELAY_METADATA: 2000}
    metadata = spark.read.format("state-metadata").load(ckpt.root).collect()
    assert {r.operatorName for r in metadata} == {jd.JOIN_OPERATOR}
    assert {r.operatorProperties for r in metadata} == {None}


def test_late_payments_never_reach_the_state(demo_factory, hdfs_demo):
    """Case 3's payments, 30 s behind: batch 0's enter the state (the watermark is still 0), batch
    1's are not stored, and from batch 2 on Spark counts them as dropped by the watermark."""
    run = demo_factory("join", "hdfs", batches=JOIN_DEMO_BATCHES)
    dropped = [p["stateOperators"][0]["numRowsDroppedByWatermark"] for p in run.progress]
    assert dropped == [0, 0] + [ROWS // 10] * (JOIN_DEMO_BATCHES - 2)


def test_an_earlier_batch(spark, hdfs_demo):
    diagnosis = diagnose(spark, hdfs_demo, batch_id=3)
    assert diagnosis.batch_id == 3
    assert categories(diagnosis) == expected(3)[0]


def test_history_from_a_later_batch_starts_from_its_state(spark, hdfs_demo, hdfs_diagnosis):
    full = hdfs_diagnosis
    later = diagnose(spark, hdfs_demo, history_start=2)
    assert later.history_start == 2
    truth = expected(LAST)[0]
    # Batch 0's late payments were evicted in batch 1: before the history read, so never seen.
    gone = {join_demo_key("order_filtered_payment_late", 0, nth=n) for n in (0, 1)}
    assert categories(later) == {k: c for k, c in truth.items() if k not in gone}
    assert later.counts["evicted_by_watermark"] == full.counts["evicted_by_watermark"] - 2
    assert [v.category for v in later.verdicts(sorted(gone))] == ["never_seen", "never_seen"]


def test_predicted_expiry_matches_the_evictions(spark, hdfs_demo, hdfs_diagnosis):
    """A waiting row's expiry (its time plus the bound) against when Spark did evict it."""
    ckpt = Checkpoint(spark, hdfs_demo)
    early, late = diagnose(spark, hdfs_demo, batch_id=4), hdfs_diagnosis
    waiting = [k for k, c in categories(early).items() if c.startswith("waiting_for")]
    final = {v.key: v for v in late.verdicts(waiting)}
    watermarks = {b: ckpt.offsets(b).watermark_ms for b in range(LAST + 1)}
    checked = 0
    for verdict in early.verdicts(waiting):
        side = "left" if verdict.category == "waiting_for_right" else "right"
        passes = verdict.evidence["expires_when_watermark_passes"]
        due = [b for b, w in watermarks.items() if b > 4 and format_utc(w, zone=False) > passes]
        removed = final[verdict.key].evidence[side]["removed_batch"]
        if final[verdict.key].category == "joined":
            continue  # a payment that came early: its order arrived in time
        assert removed == (due[0] if due else None), verdict
        checked += 1
    assert checked >= 10


def test_rocksdb_without_changelog_compares_retained_batches(spark, demo_factory):
    path = demo_factory("join", "rocksdb", batches=2).checkpoint_path
    ckpt = Checkpoint(spark, path)
    assert jd.history_method(ckpt) == jd.RETAINED_BATCHES
    assert "RocksDB without changelog checkpointing" in jd.method_reason(ckpt, jd.RETAINED_BATCHES)
    diagnosis = diagnose(spark, path)
    assert diagnosis.method == jd.RETAINED_BATCHES
    assert categories(diagnosis) == expected(1)[0]
    (late,) = diagnosis.verdicts([join_demo_key("order_filtered_payment_late", 0)])
    assert late.category == "evicted_by_watermark"
    assert late.evidence["right"]["removed_batch"] == 1


def test_time_bounds_read_from_the_checkpoint(spark, hdfs_demo, demo_factory):
    """Without bounds given, the watermark's evictions tell them: the demo's 3 s and 3 s, known to
    within the watermark's 1 s step; a young join whose watermark evicted nothing cannot tell."""
    spec = jd.resolve_join(Checkpoint(spark, hdfs_demo))
    assert (spec.lower_bound_seconds, spec.upper_bound_seconds) == (3.0, 3.0)
    assert (spec.bounds.lower_max, spec.bounds.upper_max) == (4.0, 4.0)
    assert "(bounds read from the checkpoint)" in spec.describe()[-3]
    given = jd.resolve_join(Checkpoint(spark, hdfs_demo), **BOUNDS)
    assert given.bounds is None and "(bounds given as parameters)" in given.describe()[-1]
    young = Checkpoint(spark, demo_factory("join", "rocksdb", batches=2).checkpoint_path)
    with pytest.raises(RunbookError) as excinfo:
        jd.resolve_join(young)
    assert ("the checkpoint cannot tell the join's lower bound yet: it needs left rows the "
            "watermark evicted") in one_line(excinfo)
    assert jd.resolve_join(young, **BOUNDS).lower_bound_seconds == JOIN_LOWER_BOUND_SECONDS


def test_time_bounds_of_an_asymmetric_condition(spark, tmp_path):
    """The lower bound is read from the left side's evictions, the upper from the right's."""
    from pyspark.sql import functions as F

    from state_runbooks.demos.checkpoints import orders_and_payments
    path = str(tmp_path / "asymmetric")
    conf = {"spark.sql.shuffle.partitions": "2",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false", **provider_conf("hdfs")}
    with session_conf(spark, conf):
        orders, payments = orders_and_payments(spark, 10)
        df = orders.alias("o").join(payments.alias("p"), F.expr(
            "o.order_id = p.order_id AND o.order_time >= p.payment_time - INTERVAL 1 SECONDS "
            "AND o.order_time <= p.payment_time + INTERVAL 5 SECONDS"))
        for _ in range(10):
            (df.writeStream.format("noop").option("checkpointLocation", path)
             .trigger(availableNow=True).start().awaitTermination())
    spec = jd.resolve_join(Checkpoint(spark, path))
    assert (spec.lower_bound_seconds, spec.upper_bound_seconds) == (1.0, 5.0)


def test_join_state_format_3(spark, demo_factory):
    """State format 3 lists one store (``default``) in state-metadata, yet Spark's reader serves
    both sides by their format-2 names: the same keys and categories as format 2."""
    run = demo_factory("join_v3", "rocksdb", batches=3)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    assert [s.store_name for s in ckpt.stores()] == ["default"]
    assert jd.unreadable_reason(ckpt, ckpt.operator(0), 2) is None
    diagnosis = diagnose(spark, run.checkpoint_path)
    assert diagnosis.method == jd.RETAINED_BATCHES
    assert "state in format 3" in jd.method_reason(ckpt, diagnosis.method, 0)
    assert categories(diagnosis) == expected(2)[0]


def test_the_same_verdicts_over_connect(hdfs_demo, hdfs_diagnosis, on_connect):
    """Over Spark Connect: the same bounds from the checkpoint, counts and evidence."""
    keys = [join_demo_key("payment_outside_time_range", LAST),
            join_demo_key("payment_for_missing_order", 0, payment=True), "ord-unknown"]
    classic = [v.to_dict() for v in hdfs_diagnosis.verdicts(keys)]
    with on_connect() as connect:
        ckpt = Checkpoint(connect, hdfs_demo)
        spec = jd.resolve_join(ckpt)
        assert (spec.lower_bound_seconds, spec.upper_bound_seconds) == (3.0, 3.0)
        diagnosis = jd.diagnose(ckpt, spec)
        assert diagnosis.counts == hdfs_diagnosis.counts
        assert [v.to_dict() for v in diagnosis.verdicts(keys)] == classic


def test_left_outer_join(spark, tmp_path):
    """The same categories as the inner join. What differs is the output: an order the watermark
    evicts unmatched comes out then, with nulls for the payment."""
    path = str(tmp_path / "left-outer")
    emitted = []

    def collect(batch_df, batch):
        emitted.extend((batch, r.order_id, r.payment_id) for r in batch_df.collect())

    conf = {"spark.sql.shuffle.partitions": "4",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false", **provider_conf("hdfs")}
    with session_conf(spark, conf):
        df = demo_query(spark, "join_left_outer", ROWS)
        for _ in range(JOIN_DEMO_BATCHES):
            (df.writeStream.foreachBatch(collect).option("checkpointLocation", path)
             .trigger(availableNow=True).start().awaitTermination())
    diagnosis = diagnose(spark, path)
    truth = expected(LAST)[0]
    assert categories(diagnosis) == truth
    # Batch 0's orders that never matched (cases 0, 1, 4, and 2: payment outside the time range)
    # were evicted in batch 7, and emitted then with a null payment.
    unmatched = {f"ord-{v}" for v in range(ROWS) if v % 10 in (0, 1, 2, 4)}
    assert {truth[k] for k in unmatched} == {"evicted_by_watermark", "outside_time_bounds"}
    assert {(b, o) for b, o, p in emitted if p is None} == {(LAST, o) for o in unmatched}


def test_composite_key(spark, composite_demo):
    diagnosis = diagnose(spark, composite_demo)
    assert diagnosis.spec.key_fields == ("field0", "field1")
    assert diagnosis.spec.key_label() == "(order_id, customer_id)"
    truth = expected(2, composite=True)[0]
    assert categories(diagnosis) == truth
    # The payment with the wrong customer: both keys wait, each for the other side.
    order, paid = ["ord-46", "cust-1"], ["ord-46", "cust-2"]
    verdicts = diagnosis.verdicts([order, paid, ("ord-47", "cust-2"), ["ord-43", "cust-3"]])
    assert [v.key for v in verdicts] == [order, paid, ["ord-47", "cust-2"], ["ord-43", "cust-3"]]
    assert [v.category for v in verdicts] == ["waiting_for_right", "waiting_for_left", "joined",
                                              "never_seen"]
    with pytest.raises(RunbookError) as excinfo:
        diagnosis.verdicts(["ord-46"])
    assert "give each item as a list of 2 values, (order_id, customer_id)" in str(excinfo.value)


def test_pairs_that_min_and_max_cannot_decide(spark, hdfs_demo):
    """Keys with several event times on both sides get the exact check, pair by pair."""
    ckpt = Checkpoint(spark, hdfs_demo)
    spec = jd.resolve_join(ckpt, **BOUNDS)
    t0 = 1_700_000_000_000

    rows = []

    def row(key, is_left, batch, seconds, idx=0, matched=False, delete=False):
        return (key, idx, is_left, batch, delete, t0 + seconds * 1000, matched, len(rows))

    for args in [  # left at 0 s and 10 s, right at 5 s: gaps -5 and +5 against [-3, +3]
            ("apart", True, 0, 0), ("apart", True, 0, 10, 1), ("apart", False, 0, 5),
            # left at 0 s and 10 s, right at 8 s, all in the state together: +2 s fits, unmatched
            ("fits", True, 0, 0), ("fits", True, 0, 10, 1), ("fits", False, 0, 8),
            # the same, but the left rows were evicted in batch 1 and the right one came in batch 2
            ("late", True, 0, 0), ("late", True, 0, 10, 1), ("late", True, 1, 0, 1, False, True),
            ("late", True, 1, 0, 0, False, True), ("late", False, 2, 8)]:
        rows.append(row(*args))
    schema = jd.history_rows(ckpt, spec, LAST, jd.CHANGE_FEED, 0).schema
    history = spark.createDataFrame(rows, schema)
    per_key, counts = jd.classify(history, spec, 2, jd.CHANGE_FEED)
    assert {r["k_field0"]: r["category"] for r in per_key.collect()} == {
        "apart": "outside_time_bounds", "fits": "unmatched_within_bounds",
        "late": "evicted_by_watermark"}
    # The keys shown get every event time of each side, read from the history.
    diagnosis = jd.Diagnosis(ckpt, spec, 2, jd.CHANGE_FEED, 0, t0, None, per_key, counts, history)
    fits = diagnosis.verdicts(["fits"])[0].evidence
    assert [t[-2:] for t in fits["left"]["times"]] == ["20", "30"]  # t0 + 0 s and + 10 s
    assert (fits["right"]["times"], fits["gap_seconds"]) == (["2023-11-14 22:13:28"], 2.0)
    assert jd.closest_pair([0, 10_000], [5_000], 3, 3) == (-5.0, 2.0)
    assert jd.closest_pair([0, 10_000], [8_000], 3, 3) == (2.0, 0.0)


# -- bad input: one line each -------------------------------------------------------------------
def test_no_join_operator(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("dedup").checkpoint_path)
    with pytest.raises(RunbookError) as excinfo:
        jd.resolve_join(ckpt, **BOUNDS)
    assert "has no stream-stream join (symmetricHashJoin) operator; its operators: 0 (dedupe)" in \
        one_line(excinfo)
    with pytest.raises(RunbookError) as excinfo:
        jd.resolve_join(ckpt, operator_id=0, **BOUNDS)
    assert "operator 0 (dedupe) is not a stream-stream join; join operators: none" in \
        one_line(excinfo)


def test_several_joins_and_no_watermark(spark, tmp_path):
    """Two stream-stream joins without watermarks: -1 asks which; a side needs its time column."""
    from pyspark.sql import functions as F

    def stream(name):
        return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 4).load()
                .select(F.col("value").alias("k"), F.col("timestamp").alias(f"{name}_time")))

    path = str(tmp_path / "two-joins")
    query = (stream("a").join(stream("b"), "k").join(stream("c"), "k").writeStream.format("noop")
             .option("checkpointLocation", path).trigger(availableNow=True).start())
    query.awaitTermination()
    ckpt = Checkpoint(spark, path)
    with pytest.raises(RunbookError) as excinfo:
        jd.resolve_join(ckpt, **BOUNDS)
    assert "has 2 stream-stream joins (operators 0, 1): pass operator_id to choose one" in \
        one_line(excinfo)
    with pytest.raises(RunbookError) as excinfo:
        jd.resolve_join(ckpt, operator_id=1, **BOUNDS)
    assert ("the left side's state has no column carrying a watermark: pass left_time_column "
            "(timestamp columns: a_time)") in one_line(excinfo)


@pytest.mark.parametrize("kwargs,message", [
    ({"left_time_column": "order_ts"},
     "left_time_column 'order_ts' is not in the left side's state (columns: order_id, customer_id, "
     "amount, order_time); timestamp columns: order_time; the watermark is on order_time"),
    ({"right_time_column": "payment_amount"},
     "right_time_column 'payment_amount' is double, not a timestamp"),
    ({"batch_id": 99}, "batch 99 is outside the retained range 0..7"),
    ({"operator_id": 3}, "operator 3 is not in checkpoint"),
    ({"lower_bound_seconds": -5.0, "upper_bound_seconds": 2.0}, "the time condition is empty"),
])
def test_bad_parameters(spark, hdfs_demo, kwargs, message):
    ckpt = Checkpoint(spark, hdfs_demo)
    with pytest.raises(RunbookError) as excinfo:
        jd.resolve_join(ckpt, **{**BOUNDS, **kwargs})
    assert message in one_line(excinfo)


def test_bad_ids_to_verify(hdfs_diagnosis):
    diagnosis = hdfs_diagnosis
    with pytest.raises(RunbookError) as excinfo:
        diagnosis.verdicts("ord-1")
    assert "ids_to_verify must be a list" in one_line(excinfo)
    with pytest.raises(RunbookError) as excinfo:
        diagnosis.verdicts([["ord-1", "cust-1"]])
    assert "does not fit the join key order_id: give each item as a single value" in \
        one_line(excinfo)


# -- the notebook, headless with parameters (nbval runs it on its demo) ---------------------------
@pytest.mark.slow
@pytest.mark.notebook
def test_notebook_with_ids_to_verify(spark, hdfs_demo, run_notebook, tmp_path):
    ids = [join_demo_key("normal", LAST), join_demo_key("payment_outside_time_range", LAST),
           join_demo_key("payment_for_missing_order", LAST, payment=True),
           join_demo_key("order_filtered_payment_late", LAST), join_demo_key("normal", 0)]
    result = run_notebook("04_diagnose_join_mismatch", checkpoint_path=hdfs_demo,
                          ids_to_verify=ids, summary_path=str(tmp_path / "join.json"), **BOUNDS)
    summary = json.loads((tmp_path / "join.json").read_text())
    assert summary == result.records["summary"]
    assert summary["runbook"] == "diagnose_join_mismatch" and summary["status"] == "warning"
    assert (summary["batch_id"], summary["operator_id"]) == (LAST, 0)
    truth = expected(LAST)[0]
    assert summary["categories"] == {**counts_of(truth), "never_seen": 1}
    assert [v["key"] for v in summary["verdicts"]] == ids
    assert [v["category"] for v in summary["verdicts"]] == [
        "joined", "outside_time_bounds", "waiting_for_left", "never_seen", "joined"]
    assert summary["verdicts"][0]["evidence"]["method"] == jd.CHANGE_FEED
    assert {f["code"] for f in summary["findings"]} == {
        "evicted_by_watermark", "outside_time_bounds", "never_seen", "waiting_for_right",
        "waiting_for_left"}


@pytest.mark.slow
@pytest.mark.notebook
@tiers.EXTENDED  # make test: composite keys in test_composite_key, fail_on in 01's notebook test
def test_notebook_composite_key_fails_on_warning(composite_demo, run_notebook, tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("04_diagnose_join_mismatch", checkpoint_path=composite_demo,
                     ids_to_verify=[["ord-46", "cust-1"], ["ord-46", "cust-2"]],
                     left_time_column="order_time", right_time_column="payment_time",
                     fail_on="warning", batch_id=2, **BOUNDS)
    assert excinfo.value.ename == "RunbookFailed"
    summary = json.loads((tmp_path / "04_diagnose_join_mismatch.summary.json").read_text())
    assert summary["status"] == "warning"
    assert [(v["key"], v["category"]) for v in summary["verdicts"]] == [
        (["ord-46", "cust-1"], "waiting_for_right"), (["ord-46", "cust-2"], "waiting_for_left")]
