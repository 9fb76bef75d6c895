"""Rules that several runbooks state: each lives in one place and is tested here once."""
import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.formatting import id_ranges
from state_runbooks.core.growth import is_rising
from state_runbooks.core.state_files import StateFile, files_seen
from state_runbooks.safety.safekeeping import check_mode


@pytest.mark.parametrize("rows, rising", [
    ([252, 254, 256, 258, 260, 262], True),   # a small rise in every batch has not levelled off
    ([100, 100, 120, 120, 130], True),        # quiet batches leave it flat: still a rise
    ([100, 200, 300, 462, 461, 462], False),  # it fell once: levelling off
    ([462, 462, 462], False),                 # flat
    ([10, 20], False),                        # too few points to call it a trend
    ([300, 200, 100], False),
])
def test_growth_is_judged_on_the_trend_not_the_size_of_the_change(rows, rising):
    assert is_rising(rows) is rising


def test_an_invalid_mode_names_the_valid_ones():
    assert check_mode("undo", ("diagnose", "rollback", "undo")) == "undo"
    with pytest.raises(RunbookError, match=r"^mode='apply' is not valid: use 'diagnose', "
                                           r"'rollback' or 'undo'$"):
        check_mode("apply", ("diagnose", "rollback", "undo"))
    with pytest.raises(RunbookError, match=r"use 'repartition' or 'undo'$"):
        check_mode("", ("repartition", "undo"))


def test_a_units_files_are_described_one_way():
    files = [StateFile(0, p, "default", v, "delta", 100, 0, f"state/0/{p}/{v}.delta")
             for p in (0, 1, 3) for v in (1, 2)]
    assert files_seen(files) == ("6 files in partitions 0..1, 3, state versions 1..2, "
                                 "600 bytes")
    assert files_seen([]) == "no state files"
    assert id_ranges([]) == "none"
