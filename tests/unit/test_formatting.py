"""Bytes and times are written one way, whichever runbook prints them."""
from __future__ import annotations

from state_runbooks.common.formatting import format_bytes, format_utc


def test_bytes_in_binary_units_with_three_figures():
    assert [format_bytes(n) for n in (0, 1023, 1536, 939_504 * 4, 2.5 * 1024 ** 3)] == [
        "0 B", "1,023 B", "1.50 KiB", "3.58 MiB", "2.50 GiB"]


def test_times_in_utc_with_milliseconds_only_when_there_are_some():
    assert format_utc(5_000) == "1970-01-01 00:00:05 UTC"
    assert format_utc(5_250) == "1970-01-01 00:00:05.250 UTC"
    assert format_utc(1_700_000_000_000, zone=False) == "2023-11-14 22:13:20"
    assert format_utc(None) is None


def test_source_offsets_are_named_where_the_offsets_log_names_them():
    from state_runbooks.common.formatting import source_offsets_lines
    assert source_offsets_lines({"0": {"logOffset": 3}}) == ['    source 0: {"logOffset": 3}']
    assert source_offsets_lines({"orders": {"t": {"0": 5}}}) == [
        '    source orders: {"t": {"0": 5}} (Kafka: use as the option startingOffsets)']
