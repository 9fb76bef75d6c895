"""The checkpoint reader on real checkpoints of each provider setup, and every bad input."""
from __future__ import annotations

import shutil

import pytest
from messages import one_line

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import CHANGELOG_CONF, PROVIDER_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs.base import sidecar_of
from state_runbooks.demos.checkpoints import DEMO_START_MS

PROVIDER_SETUPS = [("hdfs", "hdfs", None, {"delta"}),
                   ("rocksdb", "rocksdb", False, {"zip"}),
                   ("rocksdb_changelog", "rocksdb", True, {"changelog"})]


@pytest.mark.parametrize("provider,kind,changelog,file_kinds", PROVIDER_SETUPS)
def test_reads_each_provider_setup(spark, demo_factory, provider, kind, changelog, file_kinds):
    run = demo_factory("two_operators", provider)
    ckpt = Checkpoint(spark, run.checkpoint_path)

    assert ckpt.root.startswith("file:/")
    assert len(ckpt.query_id) == 36
    assert ckpt.offset_batch_ids == [0, 1, 2, 3]
    assert ckpt.commit_batch_ids == [0, 1, 2, 3]
    assert ckpt.last_committed_batch_id == 3
    assert ckpt.provider_kind == kind
    assert ckpt.pinned_conf[PROVIDER_CONF] == ckpt.provider_class
    assert ckpt.changelog_checkpointing is changelog
    assert [(op.operator_id, op.operator_name) for op in ckpt.operators()] == [
        (0, "stateStoreSave"), (1, "dedupe")]
    assert all(s.num_partitions == run.partitions and s.store_name == "default"
               for s in ckpt.stores())
    assert ckpt.retained_batch_range() == (0, 3)

    files = ckpt.state_files()
    assert {f.kind for f in files} >= file_kinds
    # State version = batch id + 1, one file per partition and version (changelog/delta/zip).
    versions = {f.version for f in files if f.kind in file_kinds}
    assert versions == {1, 2, 3, 4}
    assert {f.partition_id for f in files} == set(range(run.partitions))
    assert all(f.size > 0 and f.path.startswith("state/") for f in files)
    disk = ckpt.disk_bytes(1, "default")
    assert disk["retained_bytes"] >= disk["latest_version_bytes"] > 0


@pytest.mark.parametrize("workload,provider", [("two_operators", "rocksdb_changelog"),
                                               ("join", "hdfs")])
def test_inventory_lists_every_file_and_serves_the_layout(spark, demo_factory, workload, provider):
    """One walk of the whole tree, sidecars included, gives the same operators, stores and state
    files as walking state/ through the checksum layer."""
    path = demo_factory(workload, provider).checkpoint_path
    walked = Checkpoint(spark, path)
    listed = Checkpoint(spark, path)
    inventory = listed.inventory()

    assert listed.operators() == walked.operators()
    assert listed.state_files() == walked.state_files()
    assert [listed.disk_bytes(s.operator_id, s.store_name) for s in listed.stores()] == \
        [walked.disk_bytes(s.operator_id, s.store_name) for s in walked.stores()]
    # Every state file and its sidecar is in the inventory, with the logs and metadata.
    files = {f.path for f in walked.state_files()}
    assert files <= set(inventory)
    assert {sidecar_of(p) for p in files} <= set(inventory)
    assert {"metadata", "offsets/0", "commits/0"} <= set(inventory)


def test_changelog_flag_is_not_pinned_in_offsets(spark, demo_factory):
    """Spark pins the provider in the offsets log but not the changelog flag: it is read from the
    files, which is why a restart can change it."""
    ckpt = Checkpoint(spark, demo_factory("two_operators", "rocksdb_changelog").checkpoint_path)
    assert CHANGELOG_CONF not in ckpt.pinned_conf
    assert ckpt.changelog_checkpointing is True


def test_join_has_four_stores(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    assert [s.store_name for s in ckpt.stores(0)] == [
        "left-keyToNumValues", "left-keyWithIndexToValue",
        "right-keyToNumValues", "right-keyWithIndexToValue"]
    files = ckpt.state_files(0, "left-keyWithIndexToValue")
    assert files and all("/left-keyWithIndexToValue/" in f.path for f in files)


def test_offsets_entry(spark, demo_factory):
    run = demo_factory("dedup")
    ckpt = Checkpoint(spark, run.checkpoint_path)
    entry = ckpt.offsets(3)
    assert entry.batch_id == 3
    assert entry.conf["spark.sql.shuffle.partitions"] == str(run.partitions)
    assert entry.sources and isinstance(entry.sources[0], dict)
    # The watermark trails the newest event (batch 3: DEMO_START + 3 s) by 5 s.
    assert ckpt.next_watermark_ms(3) == DEMO_START_MS + 3_000 - 5_000


def test_operators_without_metadata_come_from_the_folders(spark, demo_factory, copy_checkpoint):
    run = demo_factory("dedup")
    path = copy_checkpoint(run.checkpoint_path)
    shutil.rmtree(f"{path}/state/0/_metadata")
    ckpt = Checkpoint(spark, path)
    (op,) = ckpt.operators()
    assert op.source == "files"
    assert op.num_partitions == run.partitions
    assert [s.store_name for s in op.stores] == ["default"]
    assert ckpt.retained_batch_range() == (0, 3)


def test_one_missing_operator_metadata_keeps_the_others(spark, demo_factory, copy_checkpoint):
    """Spark's state-metadata returns no rows once one operator's file is missing: the others
    are read from their own metadata files, the one without from its folders."""
    path = copy_checkpoint(demo_factory("two_operators").checkpoint_path)
    shutil.rmtree(f"{path}/state/1/_metadata")
    ckpt = Checkpoint(spark, path)
    first, second = ckpt.operators()
    assert (first.operator_name, first.source, first.metadata_version) == (
        "stateStoreSave", "metadata-file", 1)
    assert (second.operator_name, second.source) == ("unknown", "files")


def test_operator_metadata_v2_and_its_properties(spark, shape_demo):
    ckpt = Checkpoint(spark, shape_demo("transform_with_state").checkpoint_path)
    (op,) = ckpt.operators()
    assert (op.source, op.metadata_version) == ("state-metadata", 2)
    names = {v["stateName"] for v in op.properties["stateVariables"]}
    assert {"events", "recent_ids", "amount_by_bucket"} <= names


# -- bad input: one line, saying what is valid ----------------------------------------------------
def test_path_that_does_not_exist(spark, tmp_path):
    with pytest.raises(RunbookError) as excinfo:
        Checkpoint(spark, str(tmp_path / "nope"))
    assert "does not exist" in one_line(excinfo)


def test_empty_path(spark):
    with pytest.raises(RunbookError) as excinfo:
        Checkpoint(spark, "  ")
    assert "checkpoint_path is empty" in one_line(excinfo)


@pytest.mark.parametrize("below", ["state", "state/0", "offsets", "commits"])
def test_path_below_the_root_names_the_root(spark, demo_factory, below):
    root = demo_factory("dedup").checkpoint_path
    with pytest.raises(RunbookError) as excinfo:
        Checkpoint(spark, f"{root}/{below}")
    message = one_line(excinfo)
    assert "pass the checkpoint root" in message and message.endswith(root.rstrip("/"))


def test_folder_that_is_not_a_checkpoint(spark, tmp_path):
    (tmp_path / "something").write_text("x")
    with pytest.raises(RunbookError) as excinfo:
        Checkpoint(spark, str(tmp_path))
    assert "is not a streaming checkpoint" in one_line(excinfo)


def test_file_instead_of_folder(spark, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunbookError) as excinfo:
        Checkpoint(spark, str(tmp_path / "file"))
    assert "is a file" in one_line(excinfo)


def test_checkpoint_without_state(spark, tmp_path):
    path = str(tmp_path / "stateless")
    query = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
             .writeStream.format("noop").option("checkpointLocation", path)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    with pytest.raises(RunbookError) as excinfo:
        Checkpoint(spark, path)
    assert "has no stateful operator" in one_line(excinfo)
    assert Checkpoint(spark, path, require_state=False).last_committed_batch_id == 0


def test_unknown_operator_lists_the_valid_ones(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    with pytest.raises(RunbookError) as excinfo:
        ckpt.operator(7)
    assert "operators: 0 (stateStoreSave), 1 (dedupe)" in one_line(excinfo)


def test_unknown_store_lists_the_valid_ones(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    with pytest.raises(RunbookError) as excinfo:
        ckpt.store(0, "left")
    assert "its stores: left-keyToNumValues, left-keyWithIndexToValue" in one_line(excinfo)


def test_batch_out_of_range_gives_the_range(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("dedup").checkpoint_path)
    assert ckpt.resolve_batch(-1) == 3
    assert ckpt.resolve_batch(2) == 2
    with pytest.raises(RunbookError) as excinfo:
        ckpt.resolve_batch(9)
    assert "outside the retained range 0..3" in one_line(excinfo)


def test_unknown_scheme(spark):
    with pytest.raises(RunbookError) as excinfo:
        Checkpoint(spark, "nosuchfs://bucket/checkpoint")
    assert "no Hadoop file system for scheme 'nosuchfs'" in one_line(excinfo)


def test_changelog_flag_follows_the_newest_version(spark, demo_factory, copy_checkpoint):
    """Switched off on restart, the next version is a zip: the old changelogs no longer count."""
    from state_runbooks.demos.checkpoints import run_demo_batches
    path = copy_checkpoint(demo_factory("dedup", "rocksdb_changelog").checkpoint_path)
    run_demo_batches(spark, "dedup", path, 1, provider="rocksdb")
    ckpt = Checkpoint(spark, path)
    assert any(f.kind == "changelog" for f in ckpt.state_files())
    assert ckpt.changelog_checkpointing is False
