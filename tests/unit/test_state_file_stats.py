"""The grammar Spark's job counts state files by (``PARTITION_FILE``, a Java regex built from
state_files' own pattern) and the figures both ways of counting share. Spark's regex engine on
real checkpoints of every shape: tests/spark/test_fleet_health.py and the corpus."""
from __future__ import annotations

import re

import pytest

from state_runbooks.core.state_file_stats import PARTITION_FILE, partition_figures

ROOT = "s3a://bucket/fleet/orders/agg"


@pytest.mark.parametrize("rel,groups", [
    ("state/0/3/5.delta", ("0", "3", None, "5", None, "delta")),
    ("state/0/3/12.snapshot", ("0", "3", None, "12", None, "snapshot")),
    ("state/2/0/7_4f0c-9a.zip", ("2", "0", None, "7", "4f0c-9a", "zip")),
    ("state/2/0/8.changelog", ("2", "0", None, "8", None, "changelog")),
    ("state/1/4/left-keyToNumValues/2.delta", ("1", "4", "left-keyToNumValues", "2", None,
                                               "delta")),
    ("state/0/0/SSTs/000012-8c1e.sst", ("0", "0", None, None, None, None)),
    ("state/0/0/_metadata/schema", ("0", "0", None, None, None, None)),
    ("state/1/4/right-keyWithIndexToValue/SSTs/000009-aa.sst",
     ("1", "4", "right-keyWithIndexToValue", None, None, None)),
])
def test_a_partitions_file_is_read_as_root_operator_partition_store_and_version(rel, groups):
    match = re.match(PARTITION_FILE, f"{ROOT}/{rel}")
    assert match and match.group(1) == ROOT
    assert match.group(2, 3, 4, 5, 6, 7) == groups


@pytest.mark.parametrize("rel", ["offsets/3", "commits/3", "metadata", "sources/0/0",
                                 "state/0/_metadata/metadata", "state/0/3/notes.txt",
                                 "state/0/3/a/b/5.delta"])
def test_files_that_are_no_partitions_are_not_counted(rel):
    assert re.match(PARTITION_FILE, f"{ROOT}/{rel}") is None


def test_the_figures_total_the_partitions_and_take_the_largest_lag():
    parts = [{"bytes": 100, "files": 3, "newest": 12, "snapshot": 10},
             {"bytes": 40, "files": 5, "newest": 12, "snapshot": 0}]
    assert partition_figures(parts) == {"bytes": 140, "files": 8, "max_files_per_partition": 5,
                                        "max_bytes_per_partition": 100, "max_snapshot_lag": 12}
    assert partition_figures([]) == {"bytes": 0, "files": 0, "max_files_per_partition": 0,
                                     "max_bytes_per_partition": 0, "max_snapshot_lag": 0}
