"""Runbook 12's own logic without Spark: where a moved source starts, in each source's format,
and the offsets entries rewritten line by line."""
from __future__ import annotations

import pytest
from messages import one_line

from state_runbooks.common.errors import RunbookError
from state_runbooks.core import offset_log
from state_runbooks.query.sources import Source
from state_runbooks.runbooks.move_checkpoint import start
from state_runbooks.runbooks.move_checkpoint.rewrite import _offsets_with


def _source(kind: str, **options) -> Source:
    return Source("source 0", kind, "", {"options": options, "paths": []})


def test_times_are_iso_or_epoch_milliseconds():
    assert start.parse_time_ms("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert start.parse_time_ms("2023-11-14T22:13:20") == 1_700_000_000_000  # UTC unless it says
    assert start.parse_time_ms("1700000000000") == 1_700_000_000_000
    assert start.parse_time_ms("yesterday") is None


def test_files_are_matched_by_their_path_below_the_folder_they_share():
    names = start._relative_names(["file:///old/in/a%201.json", "file:///old/in/b.json"])
    assert set(names) == {"a 1.json", "b.json"}


def test_kafka_offsets_are_written_as_spark_writes_them():
    got = start.plan_start(None, _source("file"), _source("kafka"), '{"t":{"1":5,"0":3}}')
    assert got.line == '{"t":{"0":3,"1":5}}'
    assert got.log["0"].startswith(b"\x00v1\n")


def test_earliest_leaves_no_offset_and_the_starting_options_must_agree():
    got = start.plan_start(None, _source("kafka"), _source("kafka", startingOffsets="earliest"),
                           "earliest")
    assert got.line is None and got.offset_text == "-"
    with pytest.raises(RunbookError) as excinfo:
        start.plan_start(None, _source("kafka"), _source("kafka"), "earliest")
    assert "startingOffsets" in one_line(excinfo)


@pytest.mark.parametrize("kind, start_at", [("rate", "latest"), ("rate-micro-batch", "read_before"),
                                            ("delta", '{"reservoirId":"x"}')])
def test_a_start_the_source_cannot_take_is_one_line(kind, start_at):
    with pytest.raises(RunbookError) as excinfo:
        start.plan_start(None, _source("file"), _source(kind), start_at)
    one_line(excinfo)


def test_rate_micro_batch_takes_its_own_offset():
    got = start.plan_start(None, _source("file"), _source("rate-micro-batch"),
                           '{"offset":40,"timestamp":1700000004000}')
    assert got.line == '{"offset":40,"timestamp":1700000004000}'


@pytest.mark.parametrize("version, line", [(1, '{"logOffset":7}'), (2, 'events:{"logOffset":7}')])
def test_only_the_moved_source_line_changes(version, line):
    names = ("events", "other") if version == 2 else (None, None)
    entry = offset_log.OffsetsText(version, {"batchWatermarkMs": 5, "conf": {"a": "b"}}, (
        offset_log.SourceOffset(names[0], '{"logOffset":7}'),
        offset_log.SourceOffset(names[1], "12")))
    data = offset_log.serialize(entry)
    assert line in data.decode()
    moved = offset_log.parse(_offsets_with(data, {0: None}))
    assert moved.metadata == entry.metadata
    assert moved.sources[0].text is None and moved.sources[1] == entry.sources[1]
