"""One rule for what a failed state load means, for every runbook (03 and 05 alike)."""
import pytest

from state_runbooks.core.state_loads import (
    DAMAGE,
    LOAD_FAILURE_MEANING,
    NOT_DAMAGE,
    READER_LIMIT,
    load_failure_kind,
)


@pytest.mark.parametrize("error_class, kind", [
    # Spark's store code failed on the files: damage, and 05 is the way back.
    ("CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", DAMAGE),
    ("CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS", DAMAGE),
    ("CANNOT_READ_ZIP_ENTRY", DAMAGE),
    ("STATE_STORE_ROW_CHECKSUM_VERIFICATION_FAILED", DAMAGE),
    # The reader refused the read itself: nothing is known about the files.
    ("STDS_FAILED_TO_READ_STATE_SCHEMA", READER_LIMIT),
    ("STDS_REQUIRED_OPTION_UNSPECIFIED", READER_LIMIT),
    ("STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS", READER_LIMIT),
    # Out of memory inside the store code is not damage: 03 must not send the user to 05 for it.
    ("CANNOT_LOAD_STATE_STORE.HDFS_STORE_PROVIDER_OUT_OF_MEMORY", NOT_DAMAGE),
    ("CANNOT_LOAD_STATE_STORE.ROCKSDB_STORE_PROVIDER_OUT_OF_MEMORY", NOT_DAMAGE),
    ("CANNOT_LOAD_STATE_STORE.UNRELEASED_THREAD_ERROR", NOT_DAMAGE),
    (None, NOT_DAMAGE),
])
def test_a_failed_load_means_one_thing_everywhere(error_class, kind):
    assert load_failure_kind(error_class) == kind


def test_only_damage_sends_the_reader_to_05():
    assert [k for k, meaning in LOAD_FAILURE_MEANING.items() if "run 05" in meaning] == [DAMAGE]
