"""Every checkpoint under a root, whole or not, found folder by folder in memory: what a fleet
check examines, and what it reports instead of skipping."""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.discovery import Found, discover
from state_runbooks.core.fs.memory import MemoryFiles


@pytest.fixture
def root():
    fs = MemoryFiles().open("mem:/fleet")
    for checkpoint in ("orders/dedup", "orders/join", "payments/v2/agg"):
        fs.write_bytes(f"{checkpoint}/metadata", b'{"id":"q"}')
        fs.write_bytes(f"{checkpoint}/offsets/0", b"v1")
        fs.write_bytes(f"{checkpoint}/commits/0", b"v1")
        fs.write_bytes(f"{checkpoint}/state/0/0/1.delta", b"x")
    fs.write_bytes("orders/dedup/sources/0/0", b"v1")  # a checkpoint's own folders are not searched
    fs.write_bytes("fresh/metadata", b'{"id":"q"}')  # started, never ran a batch
    fs.write_bytes("logs-gone/state/0/0/1.delta", b"x")
    fs.write_bytes("logs-gone/metadata", b'{"id":"q"}')
    fs.write_bytes("data/2026/12/part-0.parquet", b"x")  # not a checkpoint at all
    return fs


def test_every_checkpoint_whole_or_not_is_found_and_nothing_else(root):
    assert discover(root) == [
        Found("fresh", "only its metadata file: the query started and never ran a batch"),
        Found("logs-gone", "holds metadata, state/ but not offsets/: its logs were deleted, or it "
                           "was only partly copied"),
        Found("orders/dedup"), Found("orders/join"), Found("payments/v2/agg")]


def test_depth_and_globs_choose_what_is_examined(root):
    assert [f.path for f in discover(root, max_depth=1)] == [
        "fresh", "logs-gone"]  # payments/v2/agg and orders/* lie deeper
    assert [f.path for f in discover(root, include=["orders/*"], exclude=["*/join"])] == [
        "orders/dedup"]


def test_the_root_itself_may_be_the_checkpoint_and_a_missing_root_is_one_line(root):
    assert discover(root.files.open("mem:/fleet/orders/dedup")) == [Found("")]
    assert discover(root.files.open("mem:/fleet/data")) == []
    with pytest.raises(RunbookError, match=r"^mem:/fleet/nowhere is not a folder .*: give the "
                                           r"folder that holds your checkpoints$"):
        discover(root.files.open("mem:/fleet/nowhere"))
