"""What a real Spark query writes for its sources, read by :mod:`state_runbooks.core.source_offsets`
and written back to the same bytes: a file source (3 JSON files, then 2 more), rate-micro-batch
and rate, in one query run twice with the availableNow trigger; the file source's log compacts
every 2 batches, so that its second file is a compact one."""
from __future__ import annotations

import json
import time

from pyspark.sql import functions as F

from state_runbooks.core import offset_log
from state_runbooks.core import source_offsets as so

COMPACT_INTERVAL = "spark.sql.streaming.fileSource.log.compactInterval"


def test_offsets_and_source_logs_that_spark_wrote(spark, tmp_path):
    inbox, root = tmp_path / "in", tmp_path / "checkpoint"
    inbox.mkdir()
    files = spark.readStream.schema("value long").json(str(inbox))
    per_batch = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 10).load()
                 .select("value"))
    rate = spark.readStream.format("rate").option("rowsPerSecond", 1).load().select("value")
    df = files.unionByName(per_batch).unionByName(rate).select(F.col("value"))
    started_ms = int(time.time() * 1000)
    spark.conf.set(COMPACT_INTERVAL, "2")  # read when the query starts
    try:
        for names in (["a", "b", "c"], ["d", "e"]):
            for name in names:
                (inbox / f"{name}.json").write_text(json.dumps({"value": 1}) + "\n")
            (df.writeStream.format("noop").option("checkpointLocation", str(root))
             .trigger(availableNow=True).start().awaitTermination())
    finally:
        spark.conf.unset(COMPACT_INTERVAL)

    for batch, names in ((0, ["a", "b", "c"]), (1, ["d", "e"])):
        entry = offset_log.parse((root / "offsets" / str(batch)).read_bytes())
        file_line, per_batch_line, rate_line = entry.sources
        assert so.parse_file_offset(file_line) == batch
        assert so.format_file_offset(batch) == file_line.text
        assert so.parse_rate_micro_batch_offset(per_batch_line) == so.RateMicroBatchOffset(
            10 * (batch + 1), 1000 * (batch + 1))
        assert so.format_rate_micro_batch_offset(
            so.parse_rate_micro_batch_offset(per_batch_line)) == per_batch_line.text
        assert so.format_rate_offset(so.parse_rate_offset(rate_line)) == rate_line.text

        data = (root / so.log_path(file_line, 0, batch, interval=2)).read_bytes()
        entries = [e for e in so.parse_file_log(data) if e.batch_id == batch]
        assert sorted(e.path.rsplit("/", 1)[-1] for e in entries) == [f"{n}.json" for n in names]
        assert all(e.path.startswith("file:///") for e in entries)
        assert so.serialize_file_log(so.parse_file_log(data)) == data

    logged = [p.name for p in (root / "sources" / "0").iterdir()]
    assert so.compact_interval(logged) == 2  # from 1.compact alone, whatever the setting
    assert so.files_read_on_restart(logged) == ["1.compact"]
    compact = so.parse_file_log((root / "sources" / "0" / "1.compact").read_bytes())
    assert [e.batch_id for e in compact] == [0, 0, 0, 1, 1]  # it repeats batch 0
    start = (root / "sources" / "2" / "0").read_bytes()
    assert started_ms <= so.parse_rate_start_time(start) <= int(time.time() * 1000)
    assert so.format_rate_start_time(so.parse_rate_start_time(start)) == start
    assert not (root / "sources" / "1").exists()  # rate-micro-batch keeps no log
