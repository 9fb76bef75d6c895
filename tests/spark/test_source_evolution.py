"""What Spark 4.3 does when a stopped stateful query restarts on another source: with named sources
(``.name()`` under source evolution, the offsets log in format 2) and, for contrast, without.

Every test restarts real queries (a windowed count with a 5 s watermark, ``trigger(availableNow)``,
one batch a start) on a copy of a checkpoint written here, and reads the offsets log and the state
(``spark.read.format("statestore")``) before and after.

How Spark decides (4.3): ``CheckpointVersionManager`` writes format 2 when source evolution is on
(or ``offsetLog.formatVersion`` is 2), and refuses to turn it on over a format 1 log. On restart
``MicroBatchExecution`` maps the sources by their names (by their positions in format 2 without
evolution) and ``OffsetMap.toStreamProgress`` hands each source the offset logged under its name:
a name the query no longer has is dropped, a name the log does not have gets nothing, and such a
source starts as in a new query (``getStartOffset``: a DSv2 stream's ``initialOffset``, a DSv1
source from its start). Nothing checks that the source under a name is still the one that logged
its offset: the new one reads the old offset as its own, or fails to.
"""
from __future__ import annotations

import json
import shutil

import pytest
import tiers
from pyspark.errors import AnalysisException, PySparkValueError, StreamingQueryException
from pyspark.sql import functions as F

from state_runbooks.common.spark_settings import (
    NO_DATA_BATCHES_CONF,
    OFFSET_LOG_FORMAT_CONF,
    SESSION_TIME_ZONE_CONF,
    SHUFFLE_PARTITIONS_CONF,
    SOURCE_EVOLUTION_CONF,
)
from state_runbooks.core import offset_log
from state_runbooks.demos.checkpoints import DEMO_START_MS
from state_runbooks.session.spark_session import progress_dict, session_conf

# One batch a start (no batch for the watermark alone), two state partitions.
QUICK = {SHUFFLE_PARTITIONS_CONF: "2", NO_DATA_BATCHES_CONF: "false"}
NAMED = {**QUICK, SOURCE_EVOLUTION_CONF: "true"}
UNNAMED = {**QUICK, SOURCE_EVOLUTION_CONF: "false"}
BY_POSITION = {**UNNAMED, OFFSET_LOG_FORMAT_CONF: "2"}  # format 2, its sources named 0, 1, ...
ROWS = 10
# The two batches of every checkpoint here: 10 rows at DEMO_START, 10 one second later, one 3 s
# window each (22:13:18 and 22:13:21 UTC); after them the watermark is DEMO_START - 4 s.
FIRST_WINDOW, SECOND_WINDOW = "2023-11-14 22:13:18", "2023-11-14 22:13:21"
STATE_AFTER_TWO_BATCHES = {FIRST_WINDOW: ROWS, SECOND_WINDOW: ROWS}
FILE_ROWS = [("2023-11-14T22:13:30", 1), ("2023-11-14T22:13:31", 2)]  # ahead of the watermark


def rate(spark, name: str | None, rows: int = ROWS, start_ms: int = DEMO_START_MS,
         advance_ms: int = 1000):
    """rate-micro-batch as event_time and value, named ``name`` (None: unnamed)."""
    reader = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows)
              .option("numPartitions", 1).option("startTimestamp", start_ms)
              .option("advanceMillisPerBatch", advance_ms))
    if name is not None:
        reader = reader.name(name)
    return reader.load().select(F.col("timestamp").alias("event_time"), "value")


def json_files(spark, name: str | None, folder):
    reader = spark.readStream.schema("event_time timestamp, value long")
    if name is not None:
        reader = reader.name(name)
    return reader.json(str(folder))


def write_json_files(folder, rows=FILE_ROWS):
    """One JSON file a row, in a new folder."""
    folder.mkdir()
    for n, (event_time, value) in enumerate(rows):
        (folder / f"part-{n}.json").write_text(
            json.dumps({"event_time": event_time + "Z", "value": value}) + "\n")
    return folder


def window_counts(df):
    return (df.withWatermark("event_time", "5 seconds")
            .groupBy(F.window("event_time", "3 seconds")).agg(F.count("*").alias("events")))


def run_once(spark, checkpoint, build, conf) -> dict:
    """One start of ``window_counts(build())`` on the checkpoint (the sources built under
    ``conf``: Spark checks their names as they are built); the progress of its batch."""
    with session_conf(spark, conf):
        query = (window_counts(build()).writeStream.format("noop").outputMode("append")
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
                 .start())
        query.awaitTermination()
    return progress_dict(query.lastProgress)


def start_fails(spark, checkpoint, build, conf) -> StreamingQueryException:
    with pytest.raises(StreamingQueryException) as failed:
        run_once(spark, checkpoint, build, conf)
    return failed.value


def starts_by_rows_per_batch(progress) -> dict[int, dict | None]:
    """Each rate-micro-batch source's start offset in a batch, by its rowsPerBatch (progress
    names a source by its description alone, not by its name)."""
    return {int(s["description"].split("rowsPerBatch=")[1].split(",")[0]): s["startOffset"]
            for s in progress["sources"]}


def batch_ids(checkpoint, log: str) -> list[int]:
    return sorted(int(p.name) for p in (checkpoint / log).iterdir() if p.name.isdigit())


def offsets(checkpoint) -> dict[int, offset_log.OffsetsText]:
    folder = checkpoint / "offsets"
    return {int(p.name): offset_log.parse(p.read_bytes())
            for p in folder.iterdir() if p.name.isdigit()}


def source_lines(checkpoint, batch: int) -> list[str]:
    """The source lines of an offsets entry as Spark wrote them (after version and metadata)."""
    return (checkpoint / "offsets" / str(batch)).read_text().split("\n")[2:]


def state_counts(spark, checkpoint) -> dict[str, int]:
    """Events per window start in the state of the last committed batch."""
    with session_conf(spark, {SESSION_TIME_ZONE_CONF: "UTC"}):  # the windows as written here
        rows = (spark.read.format("statestore").load(str(checkpoint))
                .select(F.col("key.window.start").cast("string"), "value.count").collect())
    return dict(map(tuple, rows))


def copy_of(checkpoint, tmp_path):
    target = tmp_path / "checkpoint"
    shutil.copytree(checkpoint, target)
    return target


def two_batches(spark, folder, build, conf):
    """A new checkpoint of two batches of ``build``."""
    for _ in range(2):
        run_once(spark, folder, build, conf)
    return folder


@pytest.fixture(scope="module")
def named(spark, tmp_path_factory):
    """Two batches over rate-micro-batch named "events" (each test restarts a copy)."""
    return two_batches(spark, tmp_path_factory.mktemp("named") / "checkpoint",
                       lambda: rate(spark, "events"), NAMED)


@pytest.fixture(scope="module")
def unnamed(spark, tmp_path_factory):
    """The same two batches with the source unnamed: offsets log format 1."""
    return two_batches(spark, tmp_path_factory.mktemp("unnamed") / "checkpoint",
                       lambda: rate(spark, None), UNNAMED)


# -- named sources: a source swapped under the same name ------------------------------------------
def test_a_source_swapped_under_the_same_name_goes_on_from_the_old_ones_offset(spark, named,
                                                                               tmp_path):
    """Another rate-micro-batch (3 rows a batch, 0.5 s a batch, a start 100 s later) under the name
    "events" is accepted without a word: it is handed the old source's offset and goes on from it,
    its own startTimestamp unread (its first rows are at DEMO_START + 2 s, not + 100 s), and the
    state is kept, its new rows added to the window the old source was filling."""
    checkpoint = copy_of(named, tmp_path)
    assert state_counts(spark, checkpoint) == STATE_AFTER_TWO_BATCHES
    progress = run_once(spark, checkpoint, lambda: rate(spark, "events", rows=3,
                                                        start_ms=DEMO_START_MS + 100_000,
                                                        advance_ms=500), NAMED)
    (source,) = progress["sources"]
    assert source["startOffset"] == {"offset": 20, "timestamp": DEMO_START_MS + 2000}
    assert source["endOffset"] == {"offset": 23, "timestamp": DEMO_START_MS + 2500}
    assert source["numInputRows"] == 3
    assert source_lines(checkpoint, 2) == ['events:{"offset":23,"timestamp":1700000002500}']
    assert state_counts(spark, checkpoint) == {FIRST_WINDOW: ROWS, SECOND_WINDOW: ROWS + 3}


def test_a_file_source_swapped_in_under_the_same_name_fails_on_the_old_offset(spark, named,
                                                                              tmp_path):
    """A file source under the name of a rate-micro-batch source is handed the rate offset, and
    the start fails as it asks itself for the last batch again (``populateStartOffsets`` ->
    ``FileStreamSource.getBatch`` -> ``FileStreamSourceOffset``): STREAM_FAILED over json4s's
    ``MappingException: No usable value for offset``. The checkpoint keeps its offsets, commits
    and state."""
    checkpoint = copy_of(named, tmp_path)
    inbox = write_json_files(tmp_path / "inbox")
    failed = start_fails(spark, checkpoint, lambda: json_files(spark, "events", inbox), NAMED)
    assert failed.getCondition() == "STREAM_FAILED"
    assert "terminated with exception: No usable value for offset" in str(failed)
    assert batch_ids(checkpoint, "offsets") == batch_ids(checkpoint, "commits") == [0, 1]
    assert state_counts(spark, checkpoint) == STATE_AFTER_TWO_BATCHES


@tiers.EXTENDED
def test_a_file_source_moved_to_another_folder_under_the_same_name_fails(spark, tmp_path):
    """A file source under its own name but reading another folder reads the last batch's files
    again with the new folder as its base path, and fails: STREAM_FAILED over
    ``IllegalArgumentException: Wrong basePath <new folder> for the root path: <a file read
    before>``."""
    first, second = write_json_files(tmp_path / "first"), write_json_files(tmp_path / "second")
    checkpoint = tmp_path / "checkpoint"
    run_once(spark, checkpoint, lambda: json_files(spark, "events", first), NAMED)
    failed = start_fails(spark, checkpoint, lambda: json_files(spark, "events", second), NAMED)
    assert failed.getCondition() == "STREAM_FAILED"
    assert f"Wrong basePath {second} for the root path: file:{first}/part-" in str(failed)


# -- named sources: a source under a new name, added, removed ------------------------------------
def test_a_source_under_a_new_name_starts_as_in_a_new_query_and_the_state_is_kept(spark, named,
                                                                                  tmp_path):
    """Renaming is not refused: the new name "clicks" is not in the log, so its source starts
    where a new query would (a rate-micro-batch at offset 0 and its own startTimestamp), the
    entry Spark writes names "clicks" alone (the offset of "events" is dropped), and the state is
    kept, a new window beside the old ones."""
    checkpoint = copy_of(named, tmp_path)
    later = DEMO_START_MS + 100_000  # 22:15:00 UTC, a window of its own
    progress = run_once(spark, checkpoint, lambda: rate(spark, "clicks", rows=3, start_ms=later),
                        NAMED)
    (source,) = progress["sources"]
    assert source["startOffset"] is None
    assert source["endOffset"] == {"offset": 3, "timestamp": later + 1000}
    assert source_lines(checkpoint, 2) == ['clicks:{"offset":3,"timestamp":1700000101000}']
    assert state_counts(spark, checkpoint) == {**STATE_AFTER_TWO_BATCHES,
                                               "2023-11-14 22:15:00": 3}


@tiers.EXTENDED
def test_a_file_source_under_a_new_name_reads_every_file_already_there(spark, named, tmp_path):
    """A file source under a new name starts as a new one: its first batch reads every file in
    its folder, Spark logs ``clicks:{"logOffset":0}`` and the files under ``sources/clicks/0``
    (its own log, by name), and the state is kept."""
    checkpoint = copy_of(named, tmp_path)
    inbox = write_json_files(tmp_path / "inbox")
    progress = run_once(spark, checkpoint, lambda: json_files(spark, "clicks", inbox), NAMED)
    assert progress["sources"][0]["numInputRows"] == len(FILE_ROWS)
    assert source_lines(checkpoint, 2) == ['clicks:{"logOffset":0}']
    logged = (checkpoint / "sources" / "clicks" / "0").read_text().split("\n")
    assert logged[0] == "v1"
    assert sorted(json.loads(line)["path"] for line in logged[1:]) == \
        [f"file://{inbox}/part-{n}.json" for n in range(len(FILE_ROWS))]
    assert state_counts(spark, checkpoint) == {**STATE_AFTER_TWO_BATCHES,
                                               "2023-11-14 22:13:30": len(FILE_ROWS)}


@tiers.EXTENDED
def test_the_watermark_is_kept_so_a_new_source_behind_it_loses_its_rows(spark, named, tmp_path):
    """The watermark goes on from the checkpoint whatever the source: a source under a new name
    whose events are a minute older than it has them dropped as late, and the state is as it
    was."""
    checkpoint = copy_of(named, tmp_path)
    watermark = offsets(checkpoint)[1].metadata["batchWatermarkMs"]
    progress = run_once(spark, checkpoint,
                        lambda: rate(spark, "backfill", rows=3, start_ms=DEMO_START_MS - 60_000),
                        NAMED)
    assert progress["sources"][0]["numInputRows"] == 3
    assert progress["stateOperators"][0]["numRowsDroppedByWatermark"] > 0
    assert offsets(checkpoint)[2].metadata["batchWatermarkMs"] >= watermark
    assert state_counts(spark, checkpoint) == STATE_AFTER_TWO_BATCHES


@tiers.EXTENDED
def test_an_added_source_starts_as_in_a_new_query_beside_the_old_one(spark, named, tmp_path):
    """A second source, "more", is accepted: it starts at its own beginning while "events" goes
    on from its offset, and the entry names both."""
    checkpoint = copy_of(named, tmp_path)
    progress = run_once(spark, checkpoint, lambda: rate(spark, "events").unionByName(
        rate(spark, "more", rows=2, start_ms=DEMO_START_MS + 1000)), NAMED)
    assert starts_by_rows_per_batch(progress) == {
        ROWS: {"offset": 20, "timestamp": DEMO_START_MS + 2000}, 2: None}
    assert sorted(source_lines(checkpoint, 2)) == [
        'events:{"offset":30,"timestamp":1700000003000}',
        'more:{"offset":2,"timestamp":1700000002000}']
    assert state_counts(spark, checkpoint) == {FIRST_WINDOW: ROWS, SECOND_WINDOW: 2 * ROWS + 2}


@pytest.fixture(scope="module")
def two_named(spark, tmp_path_factory):
    """Two batches over "events" and "more" (2 rows a batch at the same event times)."""
    return two_batches(spark, tmp_path_factory.mktemp("two-named") / "checkpoint",
                       lambda: rate(spark, "events").unionByName(rate(spark, "more", rows=2)),
                       NAMED)


@tiers.EXTENDED
def test_a_removed_source_is_dropped_from_the_log_and_the_state_is_kept(spark, two_named,
                                                                        tmp_path):
    """Removing "more" is accepted: the next entry names "events" alone, which goes on from its
    offset, and the state is kept."""
    checkpoint = copy_of(two_named, tmp_path)
    before = state_counts(spark, checkpoint)
    run_once(spark, checkpoint, lambda: rate(spark, "events"), NAMED)
    assert source_lines(checkpoint, 2) == ['events:{"offset":30,"timestamp":1700000003000}']
    assert state_counts(spark, checkpoint) == {**before,
                                               SECOND_WINDOW: before[SECOND_WINDOW] + ROWS}


@tiers.EXTENDED
def test_a_source_back_after_one_batch_resumes_and_after_two_starts_afresh(spark, two_named,
                                                                           tmp_path):
    """A restart reads the last two entries: the batch before's start offsets, updated by the last
    batch's end. So "more", removed for one batch, comes back at its offset in the entry before
    (4); removed for two, it starts afresh as a new source would."""
    def with_more():
        return rate(spark, "events").unionByName(rate(spark, "more", rows=2))

    after_one = copy_of(two_named, tmp_path / "one")
    run_once(spark, after_one, lambda: rate(spark, "events"), NAMED)
    after_two = copy_of(after_one, tmp_path / "two")
    run_once(spark, after_two, lambda: rate(spark, "events"), NAMED)

    def start_of_more(checkpoint):
        return starts_by_rows_per_batch(run_once(spark, checkpoint, with_more, NAMED))[2]
    assert start_of_more(after_one) == {"offset": 4, "timestamp": DEMO_START_MS + 2000}
    assert start_of_more(after_two) is None


# -- named sources: what the names and the setting must be ---------------------------------------
@tiers.EXTENDED
def test_the_setting_writes_format_2_names_every_line_and_is_pinned(named):
    """Source evolution writes the offsets log in format 2, a ``<name>:<offset>`` line a source,
    and records itself in each entry's metadata: the checkpoint keeps it on."""
    entries = offsets(named)
    assert {e.version for e in entries.values()} == {2}
    assert [s.name for s in entries[1].sources] == ["events"]
    assert entries[1].metadata["conf"][SOURCE_EVOLUTION_CONF] == "true"


@tiers.EXTENDED
def test_how_sources_must_be_named(spark, tmp_path):
    """The rules, checked as each source is built: a name only with the setting on
    (SOURCE_NAMING_NOT_SUPPORTED), every source named with it on
    (UNNAMED_STREAMING_SOURCES_WITH_ENFORCEMENT), of letters, digits and underscores (PySpark's
    INVALID_STREAMING_SOURCE_NAME); and as the query starts, each name once
    (DUPLICATE_SOURCE_NAMES)."""
    evolution = "STREAMING_QUERY_EVOLUTION_ERROR."
    with session_conf(spark, UNNAMED), pytest.raises(AnalysisException) as naming_off:
        rate(spark, "events")
    assert naming_off.value.getCondition() == evolution + "SOURCE_NAMING_NOT_SUPPORTED"
    with session_conf(spark, NAMED):
        with pytest.raises(AnalysisException) as unnamed:
            rate(spark, None)
        assert unnamed.value.getCondition() == \
            evolution + "UNNAMED_STREAMING_SOURCES_WITH_ENFORCEMENT"
        assert "Unnamed sources found: Leaf position 0 - rate-micro-batch" in str(unnamed.value)
        with pytest.raises(PySparkValueError) as invalid:
            rate(spark, "my-events")
        assert invalid.value.getCondition() == "INVALID_STREAMING_SOURCE_NAME"
    with pytest.raises(AnalysisException) as twice:  # as the query starts
        run_once(spark, tmp_path / "checkpoint", lambda: rate(spark, "events").unionByName(
            rate(spark, "events")), NAMED)
    assert twice.value.getCondition() == evolution + "DUPLICATE_SOURCE_NAMES"
    assert "Duplicate streaming source names detected: 'events'" in str(twice.value)


@tiers.EXTENDED
def test_a_named_checkpoint_restarted_with_the_setting_off_fails(spark, named, tmp_path):
    """The setting pinned in the log turns on the names at the restart, but the session's setting
    decides what the query may be built with: off, a source cannot be named
    (SOURCE_NAMING_NOT_SUPPORTED, as test_how_sources_must_be_named shows), and unnamed it fails
    at the start: STREAM_FAILED over ``AssertionError: assertion failed: All sources should be
    named at this point - validation should have happened in analysis``."""
    failed = start_fails(spark, copy_of(named, tmp_path), lambda: rate(spark, None), UNNAMED)
    assert failed.getCondition() == "STREAM_FAILED"
    assert "assertion failed: All sources should be named at this point" in str(failed)


@tiers.EXTENDED
def test_format_2_without_names_matches_sources_by_position_and_accepts_one_more(spark, tmp_path):
    """``offsetLog.formatVersion=2`` alone names each line by its source's position (``0:``), and
    a restart (the setting no longer needed: the log keeps its format) matches the log by those
    names, not by count: a second source is accepted as "1", from its start (in format 1 the same
    change is refused)."""
    checkpoint = two_batches(spark, tmp_path / "checkpoint", lambda: rate(spark, None), BY_POSITION)
    assert source_lines(checkpoint, 1) == ['0:{"offset":20,"timestamp":1700000002000}']
    run_once(spark, checkpoint, lambda: rate(spark, None).unionByName(
        rate(spark, None, rows=2, start_ms=DEMO_START_MS + 1000)), UNNAMED)
    assert sorted(source_lines(checkpoint, 2)) == [
        '0:{"offset":30,"timestamp":1700000003000}', '1:{"offset":2,"timestamp":1700000002000}']


# -- format 1, for contrast ----------------------------------------------------------------------
@tiers.EXTENDED
def test_format_1_a_source_of_the_same_kind_goes_on_from_the_old_offset(spark, unnamed, tmp_path):
    """Without names the source at position 0 is handed position 0's offset: another
    rate-micro-batch goes on from it without a word, as under a kept name."""
    checkpoint = copy_of(unnamed, tmp_path)
    progress = run_once(spark, checkpoint, lambda: rate(spark, None, rows=3,
                                                        start_ms=DEMO_START_MS + 100_000), UNNAMED)
    assert progress["sources"][0]["startOffset"] == {"offset": 20,
                                                     "timestamp": DEMO_START_MS + 2000}
    assert source_lines(checkpoint, 2) == ['{"offset":23,"timestamp":1700000003000}']


@tiers.EXTENDED
@pytest.mark.parametrize("change", ["file_source", "added_source", "source_evolution_on"])
def test_format_1_refuses_another_kind_a_source_more_and_the_names(spark, unnamed, tmp_path,
                                                                   change):
    """Without names a restart fails (STREAM_FAILED, the checkpoint as it was) on: a file source
    at position 0 (the rate offset unreadable, as under a kept name); a source more (``assertion
    failed: There are [1] sources in the checkpoint offsets and now there are [2] sources
    requested by the query. Cannot continue.``); source evolution turned on
    (STREAMING_QUERY_EVOLUTION_ERROR.CANNOT_ENABLE_ON_EXISTING_CHECKPOINT: a checkpoint cannot
    move to names, only a new one starts with them)."""
    checkpoint = copy_of(unnamed, tmp_path)
    inbox = write_json_files(tmp_path / "inbox")
    build, conf, said = {
        "file_source": (lambda: json_files(spark, None, inbox), UNNAMED,
                        "terminated with exception: No usable value for offset"),
        "added_source": (lambda: rate(spark, None).unionByName(rate(spark, None, rows=2)),
                         UNNAMED, "assertion failed: There are [1] sources in the checkpoint "
                                  "offsets and now there are [2] sources requested by the query. "
                                  "Cannot continue."),
        "source_evolution_on": (lambda: rate(spark, "events"), NAMED,
                                "[STREAMING_QUERY_EVOLUTION_ERROR.CANNOT_ENABLE_ON_EXISTING_"
                                "CHECKPOINT] Streaming query evolution error: Cannot enable "
                                "streaming source evolution on a checkpoint that was created "
                                "without it. The existing checkpoint uses offset log format "
                                "version 1"),
    }[change]
    failed = start_fails(spark, checkpoint, build, conf)
    assert failed.getCondition() == "STREAM_FAILED"
    assert said in str(failed)
    assert batch_ids(checkpoint, "offsets") == batch_ids(checkpoint, "commits") == [0, 1]
    assert state_counts(spark, checkpoint) == STATE_AFTER_TWO_BATCHES
