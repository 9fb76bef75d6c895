"""Runbook 03's arithmetic: the skew ratio (empty partitions count) and the batches sampled."""
from __future__ import annotations

import pytest

from state_runbooks.core import growth as state_growth
from state_runbooks.runbooks import inspect_state


@pytest.mark.parametrize("rows,ratio", [([0, 0, 4, 0], 4.0), ([2, 2], 1.0), ([3, 1], 1.5),
                                        ([0, 0], None), ([], None)])
def test_skew_ratio_counts_empty_partitions(rows, ratio):
    assert inspect_state.skew_ratio(rows) == ratio


@pytest.mark.parametrize("first,last,points,expected", [
    (0, 3, 12, [0, 1, 2, 3]), (5, 5, 12, [5]), (0, 99, 5, [0, 25, 50, 74, 99]), (0, 9, 1, [9])])
def test_sample_batches(first, last, points, expected):
    assert state_growth.sample_batches(first, last, points) == expected


@pytest.mark.parametrize("rows,level", [
    ([5, 10, 15, 15, 15, 15], 2),  # held 15 at four samples: levelled off
    ([20, 40, 60, 80, 100, 120, 120, 120], 5),
    ([10, 20, 30, 40], None),  # still rising
    ([10, 20, 20], None),  # held at two samples only: a quiet batch, not yet a level
])
def test_a_rise_held_at_its_last_samples_has_levelled_off(rows, level):
    assert state_growth.level_from(rows, list(range(len(rows)))) == level


def _report(label_id: int, rule: str):
    from state_runbooks.core.store_scan import StoreReport

    return StoreReport(label_id, "dedupe", "default", 4, 7, 10, 0, 0, [10], 1.0, expiry_rule=rule)


def _growth(**columns):
    import pandas as pd

    table = pd.DataFrame(columns)
    table.index.name = "batch_id"
    return table


def test_state_that_rose_then_held_level_under_a_watermark_passes_the_growth_check():
    from state_runbooks.running.checklist import check_growth

    table = _growth(**{"0/default": [5, 10, 15, 15, 15], "1/default": [20, 40, 60, 80, 100]})
    reports = [_report(0, "watermark_key"), _report(1, "watermark_key")]
    filling = check_growth(reports, table, watermark=1_000)
    assert filling.details["status"] == "info"
    assert filling.message.startswith("1/default only grew (20 -> 100 rows;")
    assert "0/default rose (5 -> 15 rows) and held 15 from batch 2: levelled off" in filling.message
    level = check_growth(reports, table[["0/default"]], watermark=1_000)
    assert level.details["status"] == "pass"
    assert "only grew" not in level.message
    # Nothing evicts a key without event time: level or not, it is a warning.
    unbounded = check_growth([_report(0, "key_without_event_time")], table[["0/default"]], 1_000)
    assert unbounded.details["status"] == "warn"
