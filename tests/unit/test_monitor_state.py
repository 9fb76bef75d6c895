"""Runbook 06's rules on constructed histories: codecs from file names, growth against the
heap, falling behind, commit share, RocksDB stalls, and memory settings read as Spark reads them."""
from __future__ import annotations

import pandas as pd
import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.runbooks.monitor_state import verdicts
from state_runbooks.runbooks.monitor_state.codecs import codec_of
from state_runbooks.runbooks.monitor_state.history import build_history


def test_codec_from_file_names():
    assert codec_of("events_1_local-1.zstd") == "zstd"
    assert codec_of("local-1.lz4.inprogress") == "lz4"
    assert codec_of("application_1_0001.snappy") == "snappy"
    assert codec_of("events_2_app-20231114-0001") == "none"
    with pytest.raises(RunbookError, match="lzf"):
        codec_of("local-1.lzf")


# -- verdicts on constructed histories --------------------------------------------------------------
def _progress(batch: int, rows: int, dropped: int = 0, commit_ms: int = 10, duration_ms: int = 1000,
              input_rate: float = 0.0, processed_rate: float = 0.0, memory: int | None = None,
              custom: dict | None = None) -> dict:
    """One batch's progress as Spark writes it, one minute after the previous batch."""
    return {"id": "q", "runId": "r", "name": "orders", "batchId": batch,
            "timestamp": (pd.Timestamp("2026-01-01T00:00:00Z") + pd.Timedelta(minutes=batch))
            .strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "batchDuration": duration_ms, "eventTime": {},
            "stateOperators": [{"operatorName": "dedupe", "numRowsTotal": rows,
                                "numRowsUpdated": 10, "numRowsRemoved": 0,
                                "memoryUsedBytes": rows * 300 if memory is None else memory,
                                "commitTimeMs": commit_ms, "numRowsDroppedByWatermark": dropped,
                                "numShufflePartitions": 4, "numStateStoreInstances": 4,
                                "customMetrics": custom or {}}],
            "sources": [{"numInputRows": 100, "inputRowsPerSecond": input_rate,
                         "processedRowsPerSecond": processed_rate}]}


LOCAL_2G = {"spark.master": "local[2]", "spark.driver.memory": "2g", "executors": 1}


def test_growing_state_is_projected_to_the_heap():
    history = build_history([_progress(b, 100_000 * (b + 1)) for b in range(10)], facts=LOCAL_2G)
    found = {v.code: v for v in verdicts.growth(history, verdicts.Thresholds())}
    assert set(found) == {"state_growing"} and found["state_growing"].severity == "warning"
    # 300 bytes per row: 30 MB more per minute, from 300 MB at the last batch towards 40% of
    # (2 GiB - 300 MiB) = 699 MiB.
    budget = (2 * 1024 ** 3 - 300 * 1024 ** 2) * 0.4
    minutes = (budget - 300_000_000) / 30_000_000
    assert f"in about {minutes:.0f} min" in found["state_growing"].message


def test_state_that_levels_off_is_not_growth():
    rows = [100, 200, 300, 400, 450, 460, 462, 462, 461, 462]
    history = build_history([_progress(b, r) for b, r in enumerate(rows)], facts=LOCAL_2G)
    assert [v.code for v in verdicts.growth(history, verdicts.Thresholds())] == ["state_bounded"]
    short = build_history([_progress(b, r) for b, r in enumerate(rows[:3])])
    assert [v.code for v in verdicts.growth(short, verdicts.Thresholds())] == ["growth_unknown"]


def test_the_growth_verdict_judges_the_trend_not_the_size_of_the_change():
    def verdict(rows):
        history = build_history([_progress(b, r) for b, r in enumerate(rows)], facts=LOCAL_2G)
        (found,) = verdicts.growth(history, verdicts.Thresholds())
        return found

    # +2 rows a batch on 1,000 rows: 1% over the window, but a rise that does not slow.
    steady = verdict([1_000 + 2 * b for b in range(12)])
    assert (steady.code, steady.severity) == ("state_growing", "warning")
    assert "its rise does not slow (+2.0 then +2.0 rows a batch)" in steady.message
    # The same start, slowing to nothing: a horizon filling up.
    slowing = verdict([1_000, 1_002, 1_004, 1_006, 1_008, 1_010, 1_012, 1_014, 1_015, 1_016,
                       1_016, 1_016])
    assert (slowing.code, slowing.severity) == ("state_levelling", "info")
    assert "slowed from +1.5 to +0.0 rows a batch" in slowing.message
    # Slowing, but by a large share: still a warning.
    large = verdict([100, 200, 300, 400, 500, 600, 700, 800, 850, 870, 880, 885])
    assert large.code == "state_growing" and "but it rose by more than 10%" in large.message
    # A fall anywhere in the window: bounded.
    assert verdict([100, 200, 300, 400, 450, 460, 462, 462, 461, 462]).code == "state_bounded"


def test_late_rows_commit_share_falling_behind_and_memory():
    progress = [_progress(b, 1000, dropped=5 if b >= 6 else 0, commit_ms=2400, duration_ms=1000,
                          input_rate=200.0, processed_rate=150.0 if b % 4 else 250.0,
                          memory=900 * 1024 ** 2) for b in range(8)]
    history = build_history(progress, facts=LOCAL_2G)
    found = {v.code: v for v in verdicts.judge(history)}
    assert "dropped 10 rows behind the watermark in 2 of 8 batches (first in batch 6" in \
        found["late_rows_dropped"].message
    assert "600 ms (median), 60% of the median batch" in found["commit_dominates"].message
    assert found["falling_behind"].message.startswith("6 of 8 batches")
    assert found["state_memory_high"].severity == "warning"
    relaxed = verdicts.Thresholds(late_rows_warning=100, commit_share_warning=0.7,
                                  memory_share_warning=0.9, falling_behind_share=0.8)
    relaxed_found = {v.code: v.severity for v in verdicts.judge(history, relaxed)}
    assert relaxed_found["late_rows_dropped"] == "info"
    assert {"commit_share", "keeping_up", "state_memory"} <= set(relaxed_found)


def test_rocksdb_stalls_are_worth_a_look():
    progress = [_progress(b, 100, custom={"rocksdbSstFileSize": 1000 * b,
                                          "rocksdbWriterStallLatencyMs": 30 if b == 2 else 0})
                for b in range(4)]
    found = [v for v in verdicts.rocksdb(build_history(progress), verdicts.Thresholds())]
    assert [v.code for v in found] == ["rocksdb_attention", "rocksdb_disk"]
    assert "rocksdbWriterStallLatencyMs above 0 in 1 batches (first 2)" in found[0].message


def test_parse_memory():
    assert verdicts.parse_memory("4g") == 4 * 1024 ** 3
    assert verdicts.parse_memory("512m") == 512 * 1024 ** 2
    assert verdicts.parse_memory("2048") == 2048 * 1024 ** 2
    assert verdicts.parse_memory("lots") is None


def test_the_exercise_tells_a_right_prediction_from_a_wrong_one():
    from state_runbooks.runbooks.monitor_state import try_it
    history = build_history([_progress(b, 100, dropped=2) for b in range(10)], facts=LOCAL_2G)
    exercise = try_it(history, verdicts.Thresholds())
    assert exercise.answer == "info"  # 20 dropped, fewer than 100
    assert exercise.check("Info").startswith("right: info")
    assert exercise.check("warning").startswith("not quite: you said warning; the run says info")
    assert exercise.check(None).startswith("no prediction yet")
    assert exercise.question.startswith("With late_rows_warning=100 instead of 1, which")


def test_the_exercise_reads_right_on_a_run_that_already_has_its_threshold():
    """Rerun with the parameter the exercise names (-p late_rows_warning 100): the question says
    so instead of "100 instead of 100"."""
    from state_runbooks.runbooks.monitor_state import try_it
    history = build_history([_progress(b, 100, dropped=2) for b in range(10)], facts=LOCAL_2G)
    exercise = try_it(history, verdicts.Thresholds(late_rows_warning=100))
    assert exercise.question.startswith("With late_rows_warning=100, as this run has it, which")
    assert exercise.answer == "info"
