"""The driver's memory stays flat in the number of keys: the steps of every runbook that read state
bring back to the driver aggregates (per partition, per batch, per category) and top-N lists, never
the state's rows.

Measured with Spark's own accounting: the bytes of the task results each stage sent to the driver
(``resultSize`` in Spark's status store: what ``collect()``, ``toPandas()`` and a broadcast bring
back), for the same steps on the same shape written with 20 times the keys. Collecting the state's
rows is measured the same way, as the yardstick: it grows with the keys, and shows that the
measurement sees rows when they come.

Joins may broadcast a small side through the driver, up to a bound: Spark's own (it broadcasts a
join side smaller than ``spark.sql.autoBroadcastJoinThreshold``, 10 MB by default) and 02's
(``MAX_BROADCAST_KEYS`` changed keys of one batch). Here both bounds are set below the demo's
keys, so that both sizes take the path a state larger than the bounds takes.

06 reads no state (its progress events grow with batches, not keys); 01 reads no rows.
"""
from __future__ import annotations

import pytest
import tiers

from state_runbooks.core import growth as state_growth
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import state_units
from state_runbooks.core.state_reader import read_state
from state_runbooks.demos.checkpoints import JOIN_LOWER_BOUND_SECONDS, JOIN_UPPER_BOUND_SECONDS
from state_runbooks.runbooks import diagnose_join_mismatch as jd
from state_runbooks.runbooks import estimate_state_size as sizing
from state_runbooks.runbooks import inspect_state
from state_runbooks.runbooks import recover_corrupted_state as recovery
from state_runbooks.runbooks import repartition_state as rp
from state_runbooks.runbooks.repartition_state.forecast import scan_state
from state_runbooks.runbooks.estimate_state_size import measurement
from state_runbooks.session.spark_session import session_conf

PARTITIONS = 4
# A step may grow by this share of what collecting the rows grows by (17 KB and 117 KB here):
# larger counts in aggregates and task metrics take a few more bytes (seen: under 0.8 KB). The
# broadcast of the demos' changed keys, were the bounds left as they are, adds 6 KB and 12 KB.
FLAT_SHARE = 0.05

# shape -> workload, provider, batches, and rows per batch: the same shape with 20 times the keys.
# The join's smaller size is the demo other tests use (built once per test process).
SHAPES = {
    "aggregation, RocksDB with changelog": ("window_agg_many_users", "rocksdb_changelog", 4,
                                            (100, 2000)),
    "join's four stores, HDFS-backed": ("join", "hdfs", 4, (20, 400)),
}


def result_bytes(spark, step) -> int:
    """Bytes of the task results that the stages ``step()`` ran sent to the driver."""
    sc = spark.sparkContext._jsc.sc()

    def stages() -> dict:
        sc.listenerBus().waitUntilEmpty()  # the status store is fed by Spark's listener bus
        gateway = spark.sparkContext._gateway
        listed = sc.statusStore().stageList(None, False, False,
                                            gateway.new_array(gateway.jvm.double, 0), None)
        out, it = {}, listed.iterator()
        while it.hasNext():
            stage = it.next()
            out[(stage.stageId(), stage.attemptId())] = stage.resultSize()
        return out

    before = stages()
    step()
    return sum(size for key, size in stages().items() if key not in before)


def collect_rows(ckpt: Checkpoint) -> None:
    for unit in state_units(ckpt):
        read_state(ckpt, unit.operator_id, unit.store_name).collect()


def forecast_07(ckpt: Checkpoint) -> None:
    scan_state(ckpt, ckpt.last_committed_batch_id, PARTITIONS, 2 * PARTITIONS)


def estimate_02(ckpt: Checkpoint) -> None:
    sizing.growth(ckpt, sizing.measure_checkpoint(ckpt))


def diagnose_04(ckpt: Checkpoint) -> None:
    spec = jd.resolve_join(ckpt, lower_bound_seconds=JOIN_LOWER_BOUND_SECONDS,
                           upper_bound_seconds=JOIN_UPPER_BOUND_SECONDS)
    diagnosis = jd.diagnose(ckpt, spec)
    diagnosis.examples(3)


STEPS = {
    "02 measure and growth": estimate_02,
    "03 stores": inspect_state.inspect_stores,
    "03 growth": state_growth.growth,
    "05 diagnose": recovery.diagnose,
    "07 forecast": forecast_07,
}


@pytest.mark.slow
@tiers.EXTENDED  # each shape written twice, at 20 times the keys: the longest check of one property
@pytest.mark.parametrize("shape", SHAPES)
def test_the_driver_gets_aggregates_not_rows(shape, spark, demo_factory, monkeypatch):
    monkeypatch.setattr(measurement, "MAX_BROADCAST_KEYS", 10)
    workload, provider, batches, sizes = SHAPES[shape]
    steps = {**STEPS, **({"04 diagnose": diagnose_04} if workload == "join" else {})}
    measured = {name: [] for name in ["collect the state's rows", *steps]}
    for rows in sizes:
        ckpt = Checkpoint(spark, demo_factory(workload, provider, batches, rows,
                                              PARTITIONS).checkpoint_path)
        with session_conf(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
            measured["collect the state's rows"].append(
                result_bytes(spark, lambda: collect_rows(ckpt)))
            for name, step in steps.items():
                measured[name].append(result_bytes(spark, lambda: step(ckpt)))
    print(f"\n{shape}: bytes sent to the driver at {sizes[0]} and {sizes[1]} rows per batch")
    for name, (small, large) in measured.items():
        print(f"  {name:28s} {small:>10,} {large:>10,}")

    small, large = measured.pop("collect the state's rows")
    assert large - small > 10_000, "collecting 20 times the keys brings back more bytes"
    grown = {name: b - a for name, (a, b) in measured.items()
             if b - a > FLAT_SHARE * (large - small)}
    assert grown == {}, f"steps whose bytes grew with the keys (rows: {large - small:,}): {grown}"
