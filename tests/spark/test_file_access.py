"""The two file access implementations give the same answers on real checkpoints.

``HadoopFS`` (classic sessions, the JVM's FileSystem API) and ``ConnectFS`` (Spark Connect, DataFrame
reads on the server) are compared file for file on demo checkpoints of every provider setup, and a
``Checkpoint`` opened over Connect must see what the classic one sees.
"""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.discovery import Found, discover
from state_runbooks.core.fs import copy_tree, open_fs
from state_runbooks.core.fs.connect import ConnectFS
from state_runbooks.core.fs.hadoop import HadoopFS
from state_runbooks.running.results import Summary, write_summary

PROVIDERS = ("hdfs", "rocksdb", "rocksdb_changelog")


def _files(fs) -> dict:
    return {rel: (e.size, e.modified_ms) for rel, e in fs.walk().items()}


def test_open_fs_follows_the_session_kind(spark, on_connect, demo_factory):
    root = demo_factory("dedup").checkpoint_path
    assert isinstance(open_fs(spark, root), HadoopFS)
    with on_connect() as connect_spark:
        assert isinstance(open_fs(connect_spark, root), ConnectFS)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_connect_listing_and_reads_equal_the_jvm_ones(spark, on_connect, demo_factory, provider):
    root = demo_factory("join", provider, batches=3).checkpoint_path
    jvm = HadoopFS(spark, root)
    with on_connect() as connect_spark:
        connect = ConnectFS(connect_spark, root)
        assert connect.root == jvm.root  # qualified the same way: file:/...
        assert _files(connect) == _files(jvm)  # .crc sidecars are hidden by both
        for rel in ("", "state", "state/0/1", "offsets/2", "metadata", "no/such", "state/9"):
            assert (connect.exists(rel), connect.is_dir(rel)) == (jvm.exists(rel), jvm.is_dir(rel))
        for rel in ("", "state/0", "state/0/1/left-keyToNumValues", "offsets"):
            assert [(e.name, e.is_dir) for e in connect.list(rel)] == \
                [(e.name, e.is_dir) for e in jvm.list(rel)]
        some_state_file = next(r for r in _files(jvm) if r.startswith("state/") and ".delta" in r
                               or r.endswith((".zip", ".changelog")))
        for rel in ("offsets/1", "commits/2", "metadata", some_state_file):
            assert connect.read_bytes(rel) == jvm.read_bytes(rel)
            assert connect.sha256(rel) == jvm.sha256(rel)


def test_connect_sees_the_hidden_state_schema_folder(spark, on_connect, tmp_path):
    """Spark's own listing drops ``_stateSchema`` below a folder; the checkpoint needs it."""
    jvm = HadoopFS(spark, str(tmp_path))
    jvm.write_bytes("metadata", b'{"id":"x"}')
    jvm.write_bytes("state/0/_stateSchema/0_abc.schema", b"schema")
    jvm.write_bytes("state/0/0/1.delta", b"delta")
    with on_connect() as connect_spark:
        assert sorted(ConnectFS(connect_spark, str(tmp_path)).walk()) == [
            "metadata", "state/0/0/1.delta", "state/0/_stateSchema/0_abc.schema"]


def test_a_checkpoint_over_connect_equals_the_classic_one(spark, on_connect, demo_factory):
    root = demo_factory("two_operators", "rocksdb_changelog").checkpoint_path
    classic = Checkpoint(spark, root)
    with on_connect() as connect_spark:
        remote = Checkpoint(connect_spark, root)
        assert remote.root == classic.root
        assert remote.operators() == classic.operators()
        assert remote.state_files() == classic.state_files()
        assert remote.pinned_conf == classic.pinned_conf
        assert remote.offset_batch_ids == classic.offset_batch_ids
        assert remote.commit_batch_ids == classic.commit_batch_ids


def test_connect_refuses_changes_outside_databricks_in_one_line(on_connect, demo_factory):
    root = demo_factory("dedup").checkpoint_path
    with on_connect() as connect_spark:
        fs = ConnectFS(connect_spark, root)
        assert not fs.can_modify
        with pytest.raises(RunbookError, match="run this step on a classic session") as err:
            fs.move_to("offsets/1", fs, "offsets/1.moved")
        assert "\n" not in str(err.value)


def test_bad_paths_over_connect_get_the_classic_messages(on_connect, demo_factory):
    root = demo_factory("dedup").checkpoint_path
    with on_connect() as connect_spark:
        with pytest.raises(RunbookError, match="checkpoint path does not exist"):
            Checkpoint(connect_spark, root + "/missing")
        with pytest.raises(RunbookError, match="pass the checkpoint root instead"):
            Checkpoint(connect_spark, root + "/state")


def test_a_dbfs_summary_goes_to_that_file_system_not_a_local_folder(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    summary = Summary("inspect_state", "file:/x", spark.version)
    with pytest.raises(RunbookError, match="no Hadoop file system for scheme 'dbfs'"):
        write_summary(summary, "dbfs:/checkpoints/summary.json", spark)
    assert not (tmp_path / "dbfs:").exists()


def test_walk_lists_every_file_whatever_its_name(spark, tmp_path):
    """The walk lists a level's folders in one call; names a glob would read as a pattern, in the
    tree and in the root itself, are listed as they are, sizes and times as the OS has them."""
    import os
    root = tmp_path / "ckpt {a,b} [1]*"
    names = ["offsets/0", "state/0/0/1.delta", "state/0/0/.1.delta.crc", "state/0/{x,y}/a b,c",
             "state/0/[z]/?", "state/0/1/SSTs/000008-u.sst", "deep/1/2/3/4/5/6/7/f"]
    for i, rel in enumerate(names):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"x" * i)
    (root / "state/0/empty").mkdir()
    on_disk = {}
    for folder, _, files in os.walk(root):
        for name in files:
            full = os.path.join(folder, name)
            on_disk[os.path.relpath(full, root)] = (os.path.getsize(full),
                                                    os.stat(full).st_mtime_ns // 1_000_000)
    raw = HadoopFS(spark, str(root)).raw()
    assert _files(raw) == on_disk and len(on_disk) == len(names)
    assert _files(HadoopFS(spark, str(root / "state"))) == {
        rel[len("state/"):]: v for rel, v in on_disk.items()
        if rel.startswith("state/") and not rel.endswith(".crc")}
    assert raw.walk("nowhere") == {}


def test_a_local_copy_reads_back_through_hadoop_as_the_original(spark, tmp_path):
    """Copies on the driver's disk skip Hadoop's per-file chmod: the bytes and the ``.crc``
    sidecar arrive as Hadoop's checked read expects them, a name Hadoop would escape too, and a
    copy never lands on an existing file."""
    root = tmp_path / "src"
    src = HadoopFS(spark, str(root))
    src.write_bytes("state/0/0/1 {a}.delta", b"\x00\x01 state bytes")
    assert (root / "state/0/0/.1 {a}.delta.crc").exists()  # written by Hadoop's checksum layer
    dst = HadoopFS(spark, str(tmp_path / "dst"))
    src.copy_to("state/0/0/1 {a}.delta", dst, "copied/1 {a}.delta")
    assert dst.read_bytes("copied/1 {a}.delta") == b"\x00\x01 state bytes"
    assert dst.verify_checksum("copied/1 {a}.delta") is None
    assert (tmp_path / "dst/copied/.1 {a}.delta.crc").read_bytes() == \
        (root / "state/0/0/.1 {a}.delta.crc").read_bytes()
    with pytest.raises(RunbookError, match="refusing to copy .* onto existing"):
        src.copy_to("state/0/0/1 {a}.delta", dst, "copied/1 {a}.delta")
    raw = dst.raw()  # without the checksum layer on both sides: the file alone
    src.raw().copy_to("state/0/0/1 {a}.delta", raw, "raw/1.delta")
    src.copy_to("state/0/0/1 {a}.delta", raw, "mixed/1.delta")  # on one side: Hadoop copies
    for rel in ("raw/1.delta", "mixed/1.delta"):
        assert raw.read_bytes(rel) == b"\x00\x01 state bytes"
        assert not (tmp_path / "dst" / rel).with_name(".1.delta.crc").exists()


# -- whole folders on the seam --------------------------------------------------------------------
def test_a_tree_is_copied_checksummed_and_removed_only_where_the_library_made_it(
        spark, on_connect, demo_factory, tmp_path):
    """copy_tree and tree_checksums through each implementation give the same bytes; remove_tree
    removes only a folder marked as made here, and refuses any other in one line."""
    from state_runbooks.core.fs import MADE_MARK, copy_tree, remove_tree, tree_checksums
    root = demo_factory("dedup").checkpoint_path
    copy = copy_tree(spark, root, str(tmp_path / "copy"))
    assert tree_checksums(spark, copy) == tree_checksums(spark, root)  # sidecars included
    with on_connect() as connect_spark:
        seen = open_fs(connect_spark, root).tree_checksums()
        assert seen == {r: c for r, c in tree_checksums(spark, root).items()
                        if not r.rsplit("/", 1)[-1].startswith(".")}  # Connect sees no .crc
        with pytest.raises(RunbookError, match="outside Databricks") as refused:
            open_fs(connect_spark, str(tmp_path / "made-over-connect")).mark_made("a test")
        assert "\n" not in str(refused.value)
    with pytest.raises(RunbookError, match=f"this library did not make it \\(no {MADE_MARK}"):
        remove_tree(spark, copy)
    assert (tmp_path / "copy" / "metadata").exists()
    made = open_fs(spark, str(tmp_path / "made"))
    made.mark_made("a test's scratch folder")
    made.raw().write_bytes("x/y", b"1")
    assert remove_tree(spark, made.root) and not (tmp_path / "made").exists()


def test_discovery_finds_real_checkpoints_under_a_root_on_hadoop(spark, demo_factory, tmp_path):
    source = demo_factory("dedup").checkpoint_path
    copy_tree(spark, source, str(tmp_path / "fleet" / "team-a" / "orders"))
    copy_tree(spark, source, str(tmp_path / "fleet" / "payments"))
    (tmp_path / "fleet" / "team-a" / "notes").mkdir()
    fs = open_fs(spark, str(tmp_path / "fleet"))
    assert discover(fs) == [Found("payments"), Found("team-a/orders")]
