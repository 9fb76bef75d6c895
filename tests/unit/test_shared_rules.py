"""Rules that several runbooks state: each lives in one place and is tested here once."""
import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.formatting import id_ranges
from state_runbooks.core.growth import is_rising
from state_runbooks.core.state_files import StateFile, files_seen
from state_runbooks.safety.safekeeping import Change


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
    rollback = Change("rollback", ".recovery-", "recover_corrupted_state",
                      ("diagnose", "rollback", "undo"))
    assert rollback.check_mode("undo") == "undo"
    with pytest.raises(RunbookError, match=r"^mode='apply' is not valid: use 'diagnose', "
                                           r"'rollback' or 'undo'$"):
        rollback.check_mode("apply")
    with pytest.raises(RunbookError, match=r"use 'repartition' or 'undo'$"):
        Change("repartition", ".repartition-", "repartition_state",
               ("repartition", "undo")).check_mode("")


def test_a_units_files_are_described_one_way():
    files = [StateFile(0, p, "default", v, "delta", 100, 0, f"state/0/{p}/{v}.delta")
             for p in (0, 1, 3) for v in (1, 2)]
    assert files_seen(files) == ("6 files in partitions 0..1, 3, state versions 1..2, "
                                 "600 bytes")
    assert files_seen([]) == "no state files"
    assert id_ranges([]) == "none"


def test_the_checkpoint_format_is_read_from_the_newest_commit_then_the_file_names():
    from state_runbooks.core.state_files import checkpoint_format_version, is_schema_file
    with_id = StateFile(0, 0, "default", 3, "zip", 10, 0, "state/0/0/3_ab-12.zip", "ab-12")
    plain = StateFile(0, 0, "default", 3, "zip", 10, 0, "state/0/0/3.zip")
    assert checkpoint_format_version("v2", [plain]) == 2
    assert checkpoint_format_version("v1", [with_id]) == 1  # the commit decides
    assert checkpoint_format_version(None, [with_id]) == 2
    assert checkpoint_format_version(None, [plain]) == 1
    assert is_schema_file("state/0/1/_metadata/schema")
    assert is_schema_file("state/0/_stateSchema/default/0_2a.schema")
    assert not is_schema_file("state/0/1/.schema.crc") and not is_schema_file("state/0/1/2.delta")


def test_state_only_rocksdb_keeps_is_never_sent_to_the_hdfs_backed_provider():
    from state_runbooks.runbooks.estimate_state_size.recommendation import recommend
    small = dict(rows=10, heap_bytes=1e4, payload_bytes=1e3, num_partitions=4)
    assert recommend(**small).provider == "hdfs"
    only = recommend(**small, rocksdb_only="operator 0 is transformWithState")
    assert only.provider == "rocksdb" and only.partitions == 4
    assert only.reason.startswith("operator 0 is transformWithState")
