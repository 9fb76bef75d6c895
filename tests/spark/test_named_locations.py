"""A checkpoint copied to a new place: transformWithState's operator metadata (here of its pandas
API) names its schema files by the original's absolute path, so the copy restarts only while the
original is there, and 03's checklist warns of it; with those paths moved to the copy
(core.named_locations) it restarts on its own, and carries on as the original does."""
from __future__ import annotations

import os
import shutil

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import copy_tree, open_fs
from state_runbooks.core.named_locations import elsewhere, metadata_v2_files, relocated
from state_runbooks.demos.checkpoints import build_demo_checkpoint, demo_query
from state_runbooks.demos.continuation import continue_query
from state_runbooks.running.checklist import check_location

ROWS = 20


def test_a_copied_transform_with_state_checkpoint_restarts_alone_once_relocated(spark, tmp_path):
    original = str(tmp_path / "original")
    build_demo_checkpoint(spark, "transform_with_state_pandas", original, batches=3, provider="rocksdb",
                          rows_per_batch=ROWS, partitions=2)
    as_copied = copy_tree(spark, original, str(tmp_path / "as-copied"))
    moved = copy_tree(spark, original, str(tmp_path / "moved"))
    fs = open_fs(spark, moved)
    foreign = elsewhere(fs)
    assert foreign and all(n.path.startswith(open_fs(spark, original).uri()) for n in foreign)
    for rel in metadata_v2_files(fs):
        fs.write_bytes(rel, relocated(fs.read_text(rel), rel, fs.uri()).encode(), overwrite=True)
    assert elsewhere(fs) == []
    # 03's checklist says which of the two depends on the original.
    assert check_location(Checkpoint(spark, as_copied)).code == "names_another_location"
    assert check_location(Checkpoint(spark, moved)) is None

    aside = str(tmp_path / "original-aside")
    os.rename(original, aside)  # the original gone: a bucket deleted, a workspace retired
    df = demo_query(spark, "transform_with_state_pandas", ROWS)
    with pytest.raises(RunbookError, match=r"File \S+/original/state/0/_stateSchema/default/0_"):
        continue_query(spark, df, as_copied, provider="rocksdb")
    # Its failed restart made the original's schema folders again, empty.
    assert [p for p in (tmp_path / "original").rglob("*") if p.is_file()] == []
    shutil.rmtree(original)
    relocated_run = continue_query(spark, df, moved, provider="rocksdb")
    assert not os.path.exists(original)  # the relocated copy reads and writes only its own place
    os.rename(aside, original)
    never_moved = continue_query(spark, df, original, provider="rocksdb")
    assert relocated_run.output and relocated_run.output == never_moved.output
