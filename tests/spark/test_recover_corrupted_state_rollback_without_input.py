"""A batch that read no input (it only advanced the watermark and evicted state) is not re-run
after a rollback until new data arrives: 05 says so instead of "re-reads the input", and a real
restart with no new data runs no batch at all.
"""
from __future__ import annotations

import json

from checkpoint_trees import age

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos import faults
from state_runbooks.runbooks import recover_corrupted_state as recovery
from state_runbooks.session.spark_session import session_conf

CONF = {"spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.noDataMicroBatches.enabled": "true"}


def _write_events(folder, name: str, first_second: int, count: int) -> None:
    rows = [{"id": f"e{first_second + i}", "ts": f"2026-01-01 00:00:{first_second + i:02d}"}
            for i in range(count)]
    (folder / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def _run(spark, source: str, checkpoint: str) -> None:
    """One availableNow start of a deduplication with a watermark over the JSON files."""
    with session_conf(spark, CONF):
        events = (spark.readStream.schema("id string, ts timestamp").json(source)
                  .withWatermark("ts", "2 seconds").dropDuplicates(["id", "ts"]))
        query = (events.writeStream.format("noop").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()


def test_a_batch_without_input_is_not_re_run_until_new_data_arrives(spark, tmp_path):
    source, checkpoint = tmp_path / "in", str(tmp_path / "checkpoint")
    source.mkdir()
    _write_events(source, "a.json", 0, 5)
    _run(spark, str(source), checkpoint)
    _write_events(source, "b.json", 20, 5)
    _run(spark, str(source), checkpoint)
    ckpt = Checkpoint(spark, checkpoint)
    last = ckpt.last_committed_batch_id
    offsets = {b: ckpt.offsets(b).sources for b in ckpt.offset_batch_ids}
    # Spark ran a batch that read nothing new after the data: it evicted by the watermark.
    assert offsets[last] == offsets[last - 1], offsets

    faults.inject_fault(ckpt, "delete_latest")  # the state the no-input batch wrote
    age(checkpoint)
    diag = recovery.diagnose(ckpt)
    assert diag.last_good_batch_id == last - 1
    assert diag.no_input_batches == [last]
    text = "\n".join(recovery.options_lines(diag))
    assert f"Batch {last} read no new input" in text and "re-reads the input" not in text, text

    plan = recovery.plan_rollback(ckpt, diag)
    assert recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(tmp_path / "backup"),
                             force=True).applied
    _run(spark, str(source), checkpoint)  # no new file: Spark runs no batch
    assert Checkpoint(spark, checkpoint).last_committed_batch_id == last - 1
    _write_events(source, "c.json", 40, 5)  # new data: the next batch runs, and evicts with it
    _run(spark, str(source), checkpoint)
    assert Checkpoint(spark, checkpoint).last_committed_batch_id >= last
