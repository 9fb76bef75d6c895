"""The absolute paths a checkpoint names for its own files (operator metadata of format 2: its
schema files), found and moved to where a copy is, in memory; Spark's restart of a copy, before and
after, is in tests/spark/test_named_locations.py."""
from __future__ import annotations

import json

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.fs.memory import MemoryFiles
from state_runbooks.core.named_locations import elsewhere, named_locations, relocated

SCHEMA = "state/0/_stateSchema/default/0_1e4d8f35-1939-4ba8-80b0-d5159d339051"


def _metadata(*paths: str) -> str:
    """A format-2 operator metadata file as Spark 4.3 writes it (transformWithState)."""
    meta = {"operatorInfo": {"operatorId": 0, "operatorName": "transformWithStateExec"},
            "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0,
                                "numPartitions": 2, "stateSchemaFilePaths": list(paths)}],
            "operatorPropertiesJson": json.dumps({"timeMode": "ProcessingTime",
                                                  "outputMode": "Append"},
                                                 separators=(",", ":"))}
    return "v2\n" + json.dumps(meta, separators=(",", ":"))


@pytest.fixture
def copied():
    """A checkpoint copied from mem:/old/q to mem:/new/q, its metadata naming the old place at
    batch 0 and the new one (as a restart there writes it) at batch 1."""
    fs = MemoryFiles().open("mem:/new/q")
    fs.write_bytes("metadata", b'{"id":"8c8c19d6-21ac-41e6-a2af-82e83988eab7"}')
    fs.write_bytes("state/0/_metadata/v2/0", _metadata(f"mem:/old/q/{SCHEMA}").encode())
    fs.write_bytes("state/0/_metadata/v2/1", _metadata(f"mem:/old/q/{SCHEMA}",
                                                       "mem:/new/q/state/0/_stateSchema/1_x")
                   .encode())
    fs.write_bytes(SCHEMA, b"schema")
    return fs


def test_a_copy_names_its_original_and_where_each_path_goes(copied):
    found = named_locations(copied)
    assert [(n.file, n.inside) for n in found] == [
        ("state/0/_metadata/v2/0", False), ("state/0/_metadata/v2/1", False),
        ("state/0/_metadata/v2/1", True)]
    assert {n.relative for n in elsewhere(copied)} == {SCHEMA}


def test_relocated_metadata_names_the_new_place_and_keeps_every_other_byte(copied):
    text = copied.read_text("state/0/_metadata/v2/1")
    moved = relocated(text, "state/0/_metadata/v2/1", copied.uri())
    assert moved == text.replace("mem:/old/q/", "mem:/new/q/")
    assert relocated(moved, "state/0/_metadata/v2/1", copied.uri()) == moved  # nothing left


def test_a_checkpoint_that_names_only_itself_has_nothing_elsewhere():
    fs = MemoryFiles().open("mem:/q")
    fs.write_bytes("state/0/_metadata/v2/0", _metadata(f"mem:/q/{SCHEMA}").encode())
    assert elsewhere(fs) == [] and len(named_locations(fs)) == 1
    assert named_locations(MemoryFiles().open("mem:/empty")) == []


def test_a_path_these_runbooks_cannot_place_or_a_damaged_file_is_one_line(copied):
    with pytest.raises(RunbookError, match=r"names mem:/else/where, which is no file of a "
                                           r"checkpoint's state/: .*nothing was changed"):
        relocated(_metadata("mem:/else/where"), "m", copied.uri())
    with pytest.raises(RunbookError, match=r"^m is not operator metadata .*run 05"):
        relocated("v2\n{cut", "m", copied.uri())


def test_03s_checklist_warns_of_a_copy_that_depends_on_its_original(copied):
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.running.checklist import check_location

    item = check_location(Checkpoint(copied.files, copied.root))
    assert (item.code, item.severity, item.details["status"]) == (
        "names_another_location", "warning", "warn")
    assert item.message.startswith("its operator metadata (state/0/_metadata/v2/0 and 1 more) "
                                   "names the schema files of mem:/old/q: this checkpoint was "
                                   "copied from there")
    for rel in ("state/0/_metadata/v2/0", "state/0/_metadata/v2/1"):
        copied.write_bytes(rel, relocated(copied.read_text(rel), rel, copied.uri()).encode(),
                           overwrite=True)
    assert check_location(Checkpoint(copied.files, copied.root)) is None


@pytest.mark.parametrize("root", ["file:/data/q", "file:///data/q", "/data/q"])
def test_one_place_however_its_root_is_spelled(root):
    from state_runbooks.core.named_locations import _same_root

    assert _same_root(f"file:/data/q/{SCHEMA}", root)
    assert not _same_root(f"file:/data/old/{SCHEMA}", root)
