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
