"""The offsets log's entries in both formats Spark writes, read and written as Spark does; a later
format is unknown, never damaged. The entries are as Spark 4.3 wrote them for a windowed count
(tests/spark/test_checkpoint_corpus.py writes and reads real ones)."""
from __future__ import annotations

import pytest

from state_runbooks.core import offset_log

META = '{"batchWatermarkMs":1699999996000,"batchTimestampMs":1796173017972,"conf":{"a":"1"}}'
V1 = f'v1\n{META}\n{{"offset":30,"timestamp":1700000003000}}\n-'.encode()
V2 = f'v2\n{META}\nevents:{{"offset":30,"timestamp":1700000003000}}\nfiles:-'.encode()


def test_format_1_is_a_line_per_source_by_position():
    entry = offset_log.parse(V1)
    assert (entry.version, entry.named) == (1, False)
    assert [(s.name, s.value) for s in entry.sources] == [
        (None, {"offset": 30, "timestamp": 1700000003000}), (None, None)]
    assert entry.metadata["batchWatermarkMs"] == 1699999996000


def test_format_2_names_each_source_and_splits_at_the_first_colon():
    entry = offset_log.parse(V2)
    assert (entry.version, entry.named) == (2, True)
    assert [(s.name, s.value) for s in entry.sources] == [
        ("events", {"offset": 30, "timestamp": 1700000003000}), ("files", None)]
    assert offset_log.problem(V2) is None


@pytest.mark.parametrize("data", [V1, V2])
def test_written_back_byte_for_byte(data):
    assert offset_log.serialize(offset_log.parse(data)) == data


def test_a_metadata_change_keeps_the_format_and_the_source_lines():
    changed = offset_log.with_metadata(V2, lambda m: {**m, "conf": {"a": "2"}})
    assert changed.split(b"\n")[0] == b"v2" and changed.split(b"\n")[2:] == V2.split(b"\n")[2:]
    assert offset_log.parse(changed).metadata["conf"] == {"a": "2"}


def test_a_later_format_is_unknown_with_what_it_holds_never_damage():
    damage, what = offset_log.problem(b"v3\n{}\nsomething:new")
    assert damage == "unknown"
    assert what.startswith("unknown: offsets log format v3") and "something:new" in what


@pytest.mark.parametrize("data,damage,says", [
    (b"", "empty", "empty"),
    (b"v", "truncated", "version line"),
    (b"v2", "truncated", "after its version line"),
    (f"v2\n{META}\n42".encode(), "garbage", "line 3 is not <name>:<offset>"),
    (f"v2\n{META}\nevents:{{\"offset\":3".encode(), "truncated", "line 3 ends mid-JSON"),
    (f"v1\n{META}\nnot json".encode(), "garbage", "line 3 is not JSON"),
    (b"\xde\xad\xbe\xef", "garbage", "not text"),
    (b"x1\n{}", "garbage", "not a version line"),
])
def test_damage_is_named_in_both_formats(data, damage, says):
    found = offset_log.problem(data)
    assert found is not None and found[0] == damage and says in found[1], found


def test_a_named_source_keeps_its_log_under_its_name():
    named, positional = offset_log.parse(V2).sources[1], offset_log.parse(V1).sources[1]
    assert offset_log.source_log_folder(named, 1) == "sources/files"
    assert offset_log.source_log_folder(positional, 1) == "sources/1"
