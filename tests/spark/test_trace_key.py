"""Runbook 11 (trace one key) on checkpoints written by real queries of every operator kind: a key
present, one the state lost (evicted by the watermark, or removed), one never seen, each traced and
compared with what Spark's reader shows at every batch; Spark's partition rule against the
reader's ``partition_id`` of every row; one partition read a batch where the key is fixed."""
from __future__ import annotations

import pytest
import tiers

from state_runbooks.common.formatting import row_text
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import tree_checksums
from state_runbooks.core.operators import state_units
from state_runbooks.core.state_placement import key_width_cut, partition_of
from state_runbooks.core.state_reader import read_unit
from state_runbooks.runbooks import trace_key as tk
from state_runbooks.runbooks.trace_key.demo import trace_demo_keys
from state_runbooks.runbooks.trace_key.history import FEED_KINDS
from state_runbooks.running.results import Summary

FEED_PROVIDERS = ("hdfs", "rocksdb_changelog")  # Spark's change feed needs a changelog
CORE = {("window_agg", "rocksdb"), ("join", "hdfs"), ("transform_with_state", "rocksdb_changelog")}
SHAPES = [tiers.case(workload, provider, core=(workload, provider) in CORE,
                     id=f"{workload}-{provider}")
          for workload, provider in [
              ("window_agg", "rocksdb"), ("window_agg", "hdfs"), ("dedup", "rocksdb_changelog"),
              ("dedup_within_watermark", "rocksdb"), ("session_window", "rocksdb"),
              ("join", "hdfs"), ("join", "rocksdb_changelog"), ("pandas_with_state", "rocksdb"),
              ("transform_with_state", "rocksdb"), ("transform_with_state", "rocksdb_changelog")]]


def keys_by_batch(ckpt, unit, key_where, first, last) -> dict:
    """What Spark's reader shows of the key at every batch: the batches whose state holds it."""
    return {b: read_unit(ckpt, unit, b).where(key_where).count() > 0
            for b in range(first, last + 1)}


@pytest.mark.parametrize(("workload", "provider"), SHAPES)
def test_a_key_traced_says_what_the_reader_shows_at_every_batch(spark, demo_factory, workload,
                                                                provider):
    run = demo_factory(workload, provider, batches=6, rows_per_batch=10, partitions=2)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    for unit in state_units(ckpt):
        df = read_unit(ckpt, unit)
        if "key" not in df.columns or unit.kind == "timers":
            continue
        first, last = ckpt.retained_batch_range(unit.operator_id)
        # Spark's rule against the reader, every row of the newest batch.
        cut = key_width_cut(ckpt, unit)
        assert df.where(partition_of(df, cut, unit.num_partitions) != df["partition_id"]) \
            .count() == 0, unit.label
        early = read_unit(ckpt, unit, first).select("key").collect()
        now = {repr(r.key) for r in df.select("key").collect()}
        keys = [r.key for r in early[:1]] + [r.key for r in df.select("key").limit(1).collect()]
        lost = [r.key for r in early if repr(r.key) not in now][:1]
        for key in dict.fromkeys(keys + lost):
            key_where = tk.key_where_for(key)
            trace = tk.trace_key(ckpt, key_where, unit.operator_id,
                                 unit.state_variable or unit.store_name)
            mine = next(t for t in trace.traces if t.label == unit.label)
            seen = keys_by_batch(ckpt, unit, key_where, first, last)
            assert {b: bool(rows) for b, rows in mine.by_batch.items()} == seen, key_where
            status = trace.status
            if seen[last]:
                assert status.status == "present"
            else:
                assert status.status in ("evicted", "removed")
                assert status.evicted_at_batch == max(b for b, s in seen.items() if s) + 1
            assert not trace.disagreements()
            assert mine.placement.partition_id is not None
            # A local checkpoint read by local tasks: the key's partition alone, from a view of
            # its files; the change feed where Spark serves one for the unit.
            assert (mine.view_why, mine.partitions_read, mine.whole_batches) == ("", 1, [])
            assert mine.read_by == ("change feed" if unit.kind in FEED_KINDS
                                    and provider in FEED_PROVIDERS else "each batch")


def test_a_key_never_seen_and_one_partition_read(spark, demo_factory):
    d = tk.DEMO
    run = demo_factory(d["workload"], d["provider"], d["batches"], d["rows_per_batch"],
                       d["partitions"])
    ckpt = Checkpoint(spark, run.checkpoint_path)
    before = tree_checksums(spark, ckpt.root)
    demo = trace_demo_keys(ckpt)
    assert tree_checksums(spark, ckpt.root) == before  # the views of one partition changed nothing
    assert demo.never_seen.status.status == "never_seen"
    assert demo.evicted.status.status == "evicted"
    assert demo.present.status.status == "present"
    for one in (demo.present, demo.evicted, demo.never_seen):
        assert one.partitions_read == 1  # the key's partition alone, from a view of its files
    summary = Summary("trace_key", ckpt.root, spark.version)
    tk.summarize(summary, demo.evicted)
    assert summary.details["key_status"] == "evicted"
    assert summary.details["evicted_at_batch"] == demo.evicted.status.evicted_at_batch
    assert summary.details["partitions_read"] == 1
    assert [h["change"] for h in summary.details["history"]][-1] == "deleted"


def test_a_condition_that_leaves_the_key_open_reads_every_partitions_change_feed(spark,
                                                                                 demo_factory):
    """Without the window, a user's condition does not fix the key: every partition is read, the
    history from the change feed, and every window of the user is traced as the reader shows."""
    ckpt = Checkpoint(spark, demo_factory("window_agg").checkpoint_path)  # HDFS-backed
    unit = state_units(ckpt)[0]
    key_where = "key.user_id = 'user-0'"
    mine = tk.trace_key(ckpt, key_where).traces[0]
    assert mine.placement.partition_id is None and mine.read_by == "change feed"
    assert mine.partitions_read == unit.num_partitions
    first, last = ckpt.retained_batch_range(unit.operator_id)
    for batch in range(first, last + 1):
        rows = read_unit(ckpt, unit, batch).where(key_where).collect()
        assert sorted(mine.by_batch[batch]) == sorted(row_text(r.key) for r in rows), batch
    assert any(len(keys) > 1 for keys in mine.by_batch.values())  # several windows at a batch


def _spellings(key) -> dict[str, str]:
    """One windowed-count key (window, user_id) as a user may write it, each fixing the whole key."""
    import datetime as dt

    def ms(value) -> int:
        return int(value.astimezone(dt.timezone.utc).timestamp() * 1000)

    def iso(value) -> str:
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    start, end, user = key.window.start, key.window.end, key.user_id
    return {
        "function calls": f"key.user_id = '{user}' AND key.window.start = timestamp_millis"
                          f"({ms(start)}) AND key.window.end = timestamp_millis({ms(end)})",
        "casts and nested brackets": f"((key.window.start = CAST('{iso(start)} UTC' AS TIMESTAMP)"
                                     f") AND (key.window.end = CAST('{iso(end)} UTC' AS "
                                     f"TIMESTAMP))) AND (key.user_id = '{user}')",
        "quotes holding AND, ) and =": f"key.user_id = '{user}' AND key.user_id <> 'x) AND "
                                       f"key.window.start = (1' AND key.window.start = "
                                       f"TIMESTAMP '{iso(start)} UTC' AND key.window.end = "
                                       f"TIMESTAMP '{iso(end)} UTC'",
        "backquotes, IN of one value, mixed case": f"`key`.`window`.`start` = TIMESTAMP "
                                                   f"'{iso(start)} UTC' aNd key.`window`.end in "
                                                   f"(timestamp '{iso(end)} UTC') And "
                                                   f"key.user_id In ('{user}')",
        "a function of literals": f"key.user_id = concat('user-', '{user.split('-', 1)[1]}') "
                                  f"AND key.window.start = timestamp_millis({ms(start)}) AND "
                                  f"key.window.end = timestamp_millis({ms(end)} + 0)",
    }


def test_every_spelling_of_a_key_traces_it_as_the_reader_shows_and_reads_one_partition(
        spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("window_agg", "rocksdb", 3, 10, 2).checkpoint_path)
    unit = state_units(ckpt)[0]
    key = read_unit(ckpt, unit).select("key").first().key
    first, last = ckpt.retained_batch_range(unit.operator_id)
    for spelling, key_where in _spellings(key).items():
        trace = tk.trace_key(ckpt, key_where)
        mine = trace.traces[0]
        seen = keys_by_batch(ckpt, unit, key_where, first, last)
        assert {b: bool(rows) for b, rows in mine.by_batch.items()} == seen, spelling
        assert seen[last] and trace.status.status == "present", spelling
        assert mine.placement.partition_id is not None and mine.partitions_read == 1, spelling


def test_a_condition_spark_cannot_parse_is_one_line_with_spark_s_reason(spark, demo_factory):
    from messages import one_line

    from state_runbooks.common.errors import RunbookError
    ckpt = Checkpoint(spark, demo_factory("window_agg", "rocksdb", 3, 10, 2).checkpoint_path)
    with pytest.raises(RunbookError) as excinfo:
        tk.trace_key(ckpt, "key.user_id = timestamp_millis(1767225604000")
    assert "PARSE_SYNTAX_ERROR" in one_line(excinfo)


def test_a_condition_that_resolves_on_no_store_gets_one_line(spark, demo_factory):
    from messages import one_line

    from state_runbooks.common.errors import RunbookError
    ckpt = Checkpoint(spark, demo_factory("window_agg", "rocksdb", 3, 10, 2).checkpoint_path)
    with pytest.raises(RunbookError) as excinfo:
        tk.trace_key(ckpt, "key.nope = 1")
    assert "key_where resolves on no unit asked for" in one_line(excinfo)


def test_over_spark_connect_the_trace_says_what_a_classic_session_says(spark, demo_factory,
                                                                       on_connect):
    d = tk.DEMO
    run = demo_factory(d["workload"], d["provider"], d["batches"], d["rows_per_batch"],
                       d["partitions"])
    classic = tk.trace_key(Checkpoint(spark, run.checkpoint_path), tk.EVICTED)
    with on_connect() as connect:
        remote = tk.trace_key(Checkpoint(connect, run.checkpoint_path), tk.EVICTED)
    assert remote.status == classic.status and remote.status.status == "evicted"
    assert [c.line() for t in remote.traces for c in t.changes] == \
        [c.line() for t in classic.traces for c in t.changes]
    assert remote.partitions_read == classic.partitions_read == 1
