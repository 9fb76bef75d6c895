"""Each source's own offset format, read and written byte for byte as Spark writes it, on literal
examples from Spark's own suites and test resources; bad input says what is wrong in one line.
(tests/spark/test_source_offsets_on_spark.py reads what a real Spark 4.3 query wrote.)"""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.core import offset_log
from state_runbooks.core import source_offsets as so


# -- Kafka ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,offsets", [
    # as Spark's JsonUtilsSuite parses it ("parsing partitionOffsets")
    ('{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}',
     {"topicA": {0: 23, 1: so.LATEST}, "topicB": {0: so.EARLIEST}}),
    # KafkaSourceOffset(("t", 0, 1L)) of KafkaSourceOffsetSuite
    ('{"t":{"0":1}}', {"t": {0: 1}}),
    # the Kafka line of offset-log-version-2.1.0/0 (OffsetSeqLogSuite)
    ('{"topic-0":{"0":1}}', {"topic-0": {0: 1}}),
    # JsonUtils.partitionOffsets run on the scala-library and json4s jars PySpark 4.3.0 ships:
    # its HashMap puts partition 17 of 32 slots before 5, and grows the topic map at 12 puts
    ('{"t":{"17":2,"5":1}}', {"t": {5: 1, 17: 2}}),
    ('{"t":{"0":0,"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9,"10":10,"11":11,"12":12}}',
     {"t": {p: p for p in range(13)}}),
])
def test_kafka_offsets_read_and_written_back_byte_for_byte(text, offsets):
    assert so.parse_kafka_offsets(text) == offsets
    assert so.format_kafka_offsets(offsets) == text


def test_kafka_topics_come_in_the_hash_order_of_scala_not_by_name():
    # the same Spark 4.3 jars: "topicB" hashes to an earlier slot than "events"
    offsets = {"events": {0: 5}, "topicB": {0: 7}}
    assert so.format_kafka_offsets(offsets) == '{"topicB":{"0":7},"events":{"0":5}}'


def test_a_kafka_line_of_spark_2_1_is_read_and_written_in_the_order_of_4_3():
    # the start of OffsetSeqLogSuite's Spark 2.1.0 Kafka offset (Scala 2.11's hash order)
    old = '{"kafka-topic":{"23":0,"8":1,"17":1,"2":6,"0":4},"kafka-topic8":{"8":0,"2":2}}'
    offsets = so.parse_kafka_offsets(old)
    assert offsets == {"kafka-topic": {0: 4, 2: 6, 8: 1, 17: 1, 23: 0}, "kafka-topic8": {2: 2, 8: 0}}
    again = so.format_kafka_offsets(offsets)
    assert again != old and so.parse_kafka_offsets(again) == offsets


def test_kafka_initial_offsets_file():
    # KafkaSourceInitialOffsetWriter.serialize: a zero byte, v1, a newline, the JSON
    data = b'\x00v1\n{"kafka-initial-offset-2-1-0":{"0":0,"1":0,"2":0}}'
    offsets = {"kafka-initial-offset-2-1-0": {0: 0, 1: 0, 2: 0}}
    assert so.parse_kafka_initial_offsets(data) == offsets
    assert so.format_kafka_initial_offsets(offsets) == data
    # Spark 2.1.0 wrote a length byte and the JSON alone (KafkaMicroBatchSourceSuite, SPARK-19517)
    assert so.parse_kafka_initial_offsets(b'\x2f{"t":{"0":0}}') == {"t": {0: 0}}


def test_kafka_initial_offsets_of_a_later_spark_are_refused_in_one_line():
    # kafka-source-initial-offset-future-version.bin
    data = b'\x00v99999\n{"kafka-initial-offset-future-version":{"2":2,"1":1,"0":0}}'
    with pytest.raises(RunbookError, match="'v99999' where Spark 4.3 writes v1") as found:
        so.parse_kafka_initial_offsets(data)
    assert "\n" not in str(found.value)


# -- the file source --------------------------------------------------------------------------
@pytest.mark.parametrize("text", ['{"logOffset":345}', "345"])
def test_file_offset_json_and_the_long_of_spark_2_0(text):
    # file-source-offset-version-2.1.0-json.txt and -long.txt (FileStreamSourceSuite)
    assert so.parse_file_offset(text) == 345
    assert so.format_file_offset(345) == '{"logOffset":345}'


def test_a_file_offset_from_the_offsets_log():
    # offset-log-version-2.1.0/0 as OffsetSeqLogSuite reads it: a file source, then Kafka
    entry = offset_log.parse(b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1480981499528}\n'
                             b'{"logOffset":345}\n{"topic-0":{"0":1}}')
    assert so.parse_file_offset(entry.sources[0]) == 345
    assert so.log_path(entry.sources[0], 0, 345) == "sources/0/345"
    assert so.log_path(offset_log.SourceOffset("files", "{}"), 0, 349) == "sources/files/349.compact"


# file-source-log-version-2.1.0 (FileStreamSourceSuite, "FileStreamSourceLog - read Spark 2.1.0
# log format"); those files end in a newline, which Spark reads but never writes
SPARK_2_1_LOG = {
    "2.compact": b'v1\n{"path":"/a/b/0","timestamp":1480730949000,"batchId":0}\n'
                 b'{"path":"/a/b/1","timestamp":1480730950000,"batchId":1}\n'
                 b'{"path":"/a/b/2","timestamp":1480730950000,"batchId":2}\n',
    "3": b'v1\n{"path":"/a/b/3","timestamp":1480730950000,"batchId":3}\n',
    "4": b'v1\n{"path":"/a/b/4","timestamp":1480730951000,"batchId":4}\n',
}


def test_file_source_log_read_and_written_as_spark_writes_it():
    entries = [e for name in so.files_read_on_restart(SPARK_2_1_LOG, default=3)
               for e in so.parse_file_log(SPARK_2_1_LOG[name])]
    assert entries == [so.FileEntry(f"/a/b/{i}", t, i) for i, t in enumerate(
        (1480730949000, 1480730950000, 1480730950000, 1480730950000, 1480730951000))]
    for data in SPARK_2_1_LOG.values():
        assert so.serialize_file_log(so.parse_file_log(data)) == data.removesuffix(b"\n")


def test_a_path_is_written_as_json4s_writes_it():
    # checked against json4s on PySpark 4.3.0's jars: controls escaped in upper-case hex,
    # everything else (non-ASCII, U+2028) as it is
    entry = so.FileEntry('file:/in/é "q" \\ \t\x01\u2028.json', 1, 0)
    data = so.serialize_file_log([entry])
    assert data == ('v1\n{"path":"file:/in/é \\"q\\" \\\\ \\t\\u0001\u2028.json",'
                    '"timestamp":1,"batchId":0}').encode()
    assert so.parse_file_log(data) == (entry,)


def test_compact_batches_and_their_file_names():
    # CompactibleFileStreamLogSuite, compact interval 3: 2, 5, 8 are compaction batches
    assert [so.log_file_name(i, 3) for i in range(6)] == ["0", "1", "2.compact", "3", "4",
                                                          "5.compact"]
    assert [i for i in range(30) if so.is_compact_batch(i)] == [9, 19, 29]
    assert [so.log_batch_id(n) for n in ("9.compact", "10", ".10.crc", "10.tmp")] == [
        9, 10, None, None]


@pytest.mark.parametrize("names,default,interval", [
    (["0", "1"], 10, 10),  # no compact file: the setting
    (["2.compact", "5.compact", "6"], 10, 3),  # two: their distance, whatever the setting
    (["4.compact"], 5, 5),  # deriveCompactInterval(5, 4) of CompactibleFileStreamLogSuite
    (["9.compact"], 4, 5),  # deriveCompactInterval(4, 9): the first divisor of 10 above 4
    (["11.compact", "12", "13"], 5, 6),  # the example of CompactibleFileStreamLog.compactInterval
])
def test_compact_interval_as_spark_derives_it(names, default, interval):
    assert so.compact_interval(names, default) == interval


def test_files_read_on_restart_are_the_latest_compact_file_and_those_after_it():
    # getAllValidBatches of CompactibleFileStreamLogSuite with interval 3
    names = ["0", "1", "2.compact", "3", "4", "5.compact", "6", "7"]
    assert so.files_read_on_restart(names) == ["5.compact", "6", "7"]
    assert so.files_read_on_restart(["0", "1"]) == ["0", "1"]
    assert so.files_read_on_restart([".0.crc"]) == []


# -- rate and rate-micro-batch ----------------------------------------------------------------
def test_rate_offset_and_start_time():
    # LongOffset.json is the number; RateStreamMicroBatchStream's log: v1, a newline, millis
    assert so.parse_rate_offset("5") == 5 and so.format_rate_offset(5) == "5"
    assert so.parse_rate_start_time(b"v1\n1700000000000") == 1700000000000
    assert so.format_rate_start_time(1700000000000) == b"v1\n1700000000000"


def test_rate_micro_batch_offset():
    # RatePerMicroBatchStreamOffset(20, 2000) of RatePerMicroBatchProviderSuite
    offset = so.parse_rate_micro_batch_offset('{"offset":20,"timestamp":2000}')
    assert offset == so.RateMicroBatchOffset(20, 2000)
    assert so.format_rate_micro_batch_offset(offset) == '{"offset":20,"timestamp":2000}'


# -- bad input: one line that says what Spark writes ------------------------------------------
@pytest.mark.parametrize("call,arg,says", [
    (so.parse_kafka_offsets, '{"t":[0,1]}', "an object of topics"),
    (so.parse_kafka_offsets, '{"t":{"x":1}}', "Not a Kafka partition ('x')"),
    (so.parse_kafka_offsets, '{"t":{"0":', "Cut short: Kafka offset ends mid-JSON"),
    (so.parse_kafka_offsets, offset_log.SourceOffset(None, None), "has no offset yet"),
    (so.parse_file_offset, '{"offset":3}', '{"logOffset":N}'),
    (so.parse_file_offset, "3.5", "Not a file source offset ('3.5')"),
    (so.parse_file_offset, "log 3", "is not JSON"),
    (so.parse_file_log, b"v2\n{}", "'v2' where Spark 4.3 writes v1"),
    (so.parse_file_log, b'v1\n{"path":"/a"}', "timestamp"),
    (so.parse_file_log, b'v1\nnot json', "line 2"),
    (so.parse_rate_offset, "five", "a whole number"),
    (so.parse_rate_start_time, b"1700000000000", "v1 and a newline"),
    (so.parse_rate_micro_batch_offset, '{"offset":20}', '{"offset":N,"timestamp":T}'),
])
def test_bad_input_is_one_line_naming_what_spark_writes(call, arg, says):
    with pytest.raises(RunbookError) as found:
        call(arg)
    assert says in str(found.value) and "\n" not in str(found.value), str(found.value)
