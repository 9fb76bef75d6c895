"""Each fact the course's prose states where a run computes it: the number a sentence gives is the
one its demo prints. The committed notebooks hold their demos' outputs, and nbval holds those
outputs to a fresh run, so a demo that changes fails here until its prose says the new figure.

A fact a run cannot print (what Spark itself does) is shown on Spark by the test named beside it.
"""
from __future__ import annotations

import pathlib
import re

import pytest
from notebook_text import outputs, prose

REPO = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _prose(name: str) -> str:
    """The notebook's markdown, its lines joined (a sentence may wrap anywhere)."""
    return " ".join(prose(REPO / "notebooks" / f"{name}.ipynb").split())


def _printed(name: str) -> str:
    return outputs(REPO / "notebooks" / f"{name}.ipynb")


def _numbers(pattern: str, text: str, where: str) -> tuple[int, ...]:
    found = re.search(pattern, text)
    assert found, f"{where} no longer says {pattern!r}"
    return tuple(int(g.replace(",", "")) for g in found.groups())


def said(name: str, pattern: str) -> tuple[int, ...]:
    """The numbers the prose of notebook ``name`` states where ``pattern`` matches."""
    return _numbers(pattern, _prose(name), f"{name}'s prose")


def printed(name: str, pattern: str) -> tuple[int, ...]:
    """The numbers the demo of notebook ``name`` printed where ``pattern`` matches."""
    return _numbers(pattern, _printed(name), f"{name}'s demo")


def test_10s_windows_that_keep_the_fill_are_those_no_event_reached_after_the_migration():
    name = "10_migrate_state"
    (keys,) = said(name, r"after two more batches the (\d+) keys hold")
    (filled,) = said(name, r"but the (\d+) windows no event reached after the migration")
    assert printed(name, r"scratch over the same input: (\d+) keys, \d+ with the same state, (\d+) "
                         r"differing in the filled field alone") == (keys, filled)
    assert printed(name, r"(\d+) of them because no event reached them after the migration") == \
        (filled,)


def test_02s_average_key_bytes_are_the_measured_key_bytes_per_row():
    name = "02_estimate_state_size"
    rows, key_bytes = printed(name, r"0/default\s+dedupe\s+(\d+)\s+(\d+)")
    assert said(name, r"(\d+) bytes a key on average") == (key_bytes // rows,)
    assert key_bytes % rows == 0


def test_02s_rows_held_are_the_ids_of_the_batches_the_watermark_keeps():
    name = "02_estimate_state_size"
    per_batch, batches, rows = said(name, r"([\d,]+) new ids per 1 s batch and a 5 s watermark "
                                          r"hold (\d+) batches of ids, the ([\d,]+) rows")
    assert per_batch * batches == rows
    assert printed(name, r"\n7\s+(\d+)\n") == (rows,)  # the growth table's last batch


def test_03s_rows_after_the_last_batch_are_the_ones_its_prose_counts():
    name = "03_inspect_state"
    batches, ids = said(name, r"keeps the ids of the (\d+) batches not yet behind the watermark "
                              r"\((?:\d+) x (\d+) rows\)")
    windows, users = said(name, r"keeps the (\d+) windows still open for each of the (\d+) users")
    assert printed(name, r"1/default rose \(\d+ -> (\d+) rows\)") == (batches * ids,)
    assert printed(name, r"0/default rose \(\d+ -> (\d+) rows\)") == (windows * users,)
    (sessions,) = said(name, r"the 4 others one each, (\d+) in all")
    assert printed(name, r"one row per open session \((\d+) here") == (sessions,)


def test_04s_waiting_row_joins_until_the_watermark_passes_its_time_plus_the_bound():
    """A row waits while the watermark is at most its time plus the bound: the time the prose
    names is that sum, and the bound is the one read from the checkpoint."""
    name = "04_diagnose_join_mismatch"
    at, bound, until = printed(name, r"order_time 22:13:(\d+), plus the (\d+) s bound\) still "
                                     r"joins if its match comes before the watermark passes "
                                     r"22:13:(\d+)")
    assert at + bound == until
    assert said(name, r"The bounds read from the checkpoint are the query's: (\d+) s") == (bound,)


def test_07s_restart_is_one_batch_later_than_the_copy_because_the_repartition_is_a_batch():
    name = "07_repartition_state"
    restarted, never, repartition = printed(
        name, r"restarted: batch (\d+) ran.*\nnever repartitioned: batch (\d+) ran on \d+ "
              r"partitions \(the same input: the repartition itself is batch (\d+)")
    assert restarted == never + 1 and repartition == never


def test_09s_drop_and_its_batch_ids_are_those_the_demo_printed():
    name = "09_rewrite_state"
    dropped, last_id, before = said(name, r"the drop takes exactly the (\d+) rows of ids 0\.\.(\d+) "
                                          r"of (\d+)")
    assert dropped == last_id + 1
    assert printed(name, r"0/default: (\d+) rows now, \d+ after, (\d+) dropped") == \
        (before, dropped)
    here, rewrite, there = printed(name, r"as batch (\d+) here \(batch (\d+) is the rewrite\) and "
                                         r"as batch (\d+) on the copy never rewritten")
    assert here == there + 1 and rewrite == there
    assert printed(name, r"bring ids 0\.\.(\d+) again") == (last_id,)


def test_12s_files_counted_as_read_are_those_the_move_carried():
    name = "12_move_checkpoint"
    read, files = said(name, r"(\d+) of the (\d+) files count as read")
    assert printed(name, r": (\d+) of (\d+) file\(s\) count as read") == (read, files)


@pytest.mark.parametrize("notebook", [p.stem for p in NOTEBOOKS])
def test_every_product_the_prose_works_out_is_right(notebook):
    """"5 x 2 x 8 = 80": each product a sentence works out, in every notebook."""
    for factors, product in re.findall(r"\b(\d+(?: x \d+)+) = ([\d,]+)\b", _prose(notebook)):
        value = 1
        for factor in factors.split(" x "):
            value *= int(factor)
        assert value == int(product.replace(",", "")), f"{factors} = {product}"


# Facts of Spark itself that the prose states, each shown on the installed Spark:
# - the late-row filter uses the watermark of the batch before, eviction the batch's own:
#   tests/spark/test_monitor_state.py (06's batch 1 drops none), tests/unit/test_course_text.py;
# - changelog checkpointing is not pinned in the offsets log:
#   tests/spark/test_enable_rocksdb.py::test_each_provider_setup_is_reported;
# - rate-micro-batch stamps every row of a batch alike:
#   tests/spark/test_demo.py::test_rate_micro_batch_stamps_every_row_of_a_batch_alike;
# - windows start on the epoch's grid, before the first event:
#   tests/unit/test_course_text.py::test_11s_closing_bullets_place_the_first_window_where_sparks_state_holds_it;
# - operator ids count from the sink's side: tests/unit/test_course_text.py.
