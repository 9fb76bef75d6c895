"""08's rules where no Spark is needed to apply them: a source's kind from the offset it logged,
what a restart does with each source change Spark decides before planning (Kafka and Delta among
them, which do not run here), and the one rule that turns rows into a verdict."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from state_runbooks.core import state_schemas as schemas
from state_runbooks.query import source_changes, sources
from state_runbooks.runbooks.check_query_change.compare import Comparison, Difference
from state_runbooks.runbooks.check_query_change.pinned_settings import pinned_settings
from state_runbooks.runbooks.check_query_change.verdict import decide


@pytest.mark.parametrize("offset,logged,kind", [
    ({"logOffset": 3}, None, "file"),
    ({"offset": 10, "timestamp": 1000}, None, "rate-micro-batch"),
    (0, "v1\n1795901207021", "rate"),
    (7, None, "unknown"),  # a number without the rate source's start time: socket or memory
    ({"orders": {"0": 12, "1": 9}}, None, "kafka"),
    ({"sourceVersion": 1, "reservoirId": "abc", "reservoirVersion": 4, "index": -1}, None,
     "delta"),
    ({"something": "else"}, None, "unknown"),
])
def test_the_kind_of_a_source_comes_from_the_shape_of_its_offset(offset, logged, kind):
    assert sources.kind_of_offset(offset, logged) == kind


def _old_file(*files):
    return sources.Source("source 0", "file", "", {"files": list(files)})


def _new_file(path):
    return sources.Source("source 0", "file", path, {"paths": [path]})


@pytest.mark.parametrize("path,verdict", [
    ("/data/in", "same"),
    ("file:/data/in/", "same"),
    ("/data/other", "fails"),
    ("/data", "changes"),  # contains the files read: the rest of /data is new input
    ("/data/in*", "accepted"),  # a pattern matching every file read
    ("/data/other/*", "changes"),  # a pattern takes no base path: no failure, other input
])
def test_a_file_source_fails_where_its_last_files_leave_the_new_base_path(path, verdict):
    old = _old_file("file:///data/in/a.json", "file:///data/in/b.json")
    found = source_changes.compare_file(old, _new_file(path))
    assert found.verdict == verdict
    if verdict == "fails":
        assert found.error.startswith(f"Wrong basePath {path} for the root path: /data/in/")


def _kafka(topics, option, value, **options):
    old = sources.Source("source 0", "kafka", "", {"topics": topics})
    new = sources.Source("source 0", "kafka", "", {"kafka": (option, value), "options": options})
    return source_changes.compare_kafka(old, new)


def test_kafka_topics_removed_fail_with_data_loss_unless_it_is_allowed():
    assert _kafka(["a", "b"], "subscribe", "a,b").verdict == "same"
    removed = _kafka(["a", "b"], "subscribe", "a")
    assert removed.verdict == "fails" and "PARTITIONS_DELETED" in removed.error
    assert _kafka(["a", "b"], "subscribe", "a", failOnDataLoss="false").verdict == "changes"


def test_kafka_topics_added_depend_on_their_earliest_offset():
    added = _kafka(["a"], "subscribe", "a,b")
    assert added.verdict == "unknown"  # fails if b's earliest offset is not 0: Kafka's to say
    assert "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO" in added.why
    assert _kafka(["a"], "subscribe", "a,b", failOnDataLoss="false").verdict == "changes"
    assert _kafka(["a"], "assign", '{"a": [0, 1]}').verdict == "same"
    assert _kafka(["a1", "a2"], "subscribepattern", "a.*").verdict == "unknown"
    assert _kafka(["a1", "b"], "subscribepattern", "a.*").verdict == "fails"


def test_a_delta_source_fails_on_another_table():
    old = sources.Source("source 0", "delta", "table id t1", {"table_id": "t1"})
    new = sources.Source("source 0", "delta", "/tables/x", {"paths": ["/tables/x"]})
    assert source_changes.compare_delta(old, new, "t1").verdict == "same"
    other = source_changes.compare_delta(old, new, "t2")
    assert other.verdict == "fails" and "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE" in \
        other.error
    assert source_changes.compare_delta(old, new, None).verdict == "unknown"


def test_sources_by_position_must_match_in_number_and_kind():
    rate = sources.Source("source 0", "rate")
    rmb = sources.Source("source 0", "rate-micro-batch")
    count = source_changes.compare_sources([rate], [rate, rmb], named=False)
    assert [v.verdict for v in count] == ["fails"]
    assert count[0].error == ("There are [1] sources in the checkpoint offsets and now there "
                              "are [2] sources requested by the query. Cannot continue.")
    assert [v.verdict for v in source_changes.compare_sources([rate], [rmb], named=False)] == ["fails"]


def test_named_sources_are_matched_by_name():
    old = [sources.Source("clicks", "rate-micro-batch"), sources.Source("files", "rate")]
    new = [sources.Source("taps", "rate-micro-batch", detail={"name": "taps"}),
           sources.Source("files", "rate", detail={"name": "files"})]
    found = {v.label: v.verdict for v in source_changes.compare_sources(old, new, named=True)}
    assert found == {"files": "same", "clicks": "changes", "taps": "changes"}


# -- the verdict: one rule ------------------------------------------------------------------------
def _probe(available=True, error=None):
    return SimpleNamespace(available=available, reason="" if available else "Spark Connect",
                           error_class=error, message="Spark says no" if error else "")


def _rehearsal(ran, error=None):
    return SimpleNamespace(attempted=True, ran=ran, batch_id=2, error_class=error,
                           message="it failed" if error else "", note="")


def _rows(*grades):
    return Comparison([Difference(f"aspect {i}", "a", "b", g) for i, g in enumerate(grades)]
                      + [Difference("source 0", "rate", "rate", "same")])


def test_restarts_only_when_every_check_ran_and_passed():
    verdict = decide(_rows("same", "accepted"), _probe(), _rehearsal(True), True)
    assert (verdict.restart, verdict.status, verdict.not_checked) == ("restarts", "ok", [])
    warned = decide(_rows("same", "ignored"), _probe(), _rehearsal(True), True)
    assert (warned.restart, warned.status) == ("restarts", "warning")


@pytest.mark.parametrize("probe,rehearsal,asked", [
    (_probe(available=False), _rehearsal(True), True),  # Spark's own check could not run
    (_probe(), None, False),  # the rehearsal was not asked
    (_probe(), SimpleNamespace(attempted=False, note="not run: no copy"), True),
])
def test_a_check_that_did_not_run_makes_it_unknown(probe, rehearsal, asked):
    verdict = decide(_rows("same"), probe, rehearsal, asked)
    assert (verdict.restart, verdict.status) == ("unknown", "warning")
    assert verdict.not_checked


def test_any_failure_fails_and_the_rehearsal_is_spark_s_answer():
    comparison = _rows("same")
    verdict = decide(comparison, _probe(), _rehearsal(False, "STREAM_FAILED"), True)
    assert (verdict.restart, verdict.status, verdict.error_class) == (
        "fails", "critical", "STREAM_FAILED")
    assert comparison.rows[-1].aspect.startswith("rehearsal") and \
        comparison.rows[-1].verdict == "fails"


def test_spark_s_own_check_decides_the_schema_rows():
    rows = Comparison([Difference("0 agg default: value", "a long", "a long, b long", "fails",
                                  error_class=schemas.VALUE_NOT_COMPATIBLE)])
    accepted = decide(rows, _probe(error=None), _rehearsal(True), True)
    assert accepted.restart == "restarts" and rows.rows[0].verdict == "accepted"
    other = Comparison([Difference("0 agg default: value", "a", "b", "same")])
    failed = decide(other, _probe(error="STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION"),
                    _rehearsal(False, "STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION"), True)
    assert failed.restart == "fails"
    assert any(r.aspect == "Spark's restart check" and r.verdict == "fails" for r in other.rows)


def test_schemas_differing_only_in_metadata_are_the_same():
    def struct(meta):
        return {"type": "struct", "fields": [{"name": "w", "type": "long", "nullable": True,
                                              "metadata": meta}]}
    assert schemas.same(struct({"spark.watermarkDelayMs": 5000}),
                        struct({"spark.watermarkDelayMs": 10000}))
    assert schemas.difference(struct({}), struct({"x": 1})) == "same"


# -- Spark's rule, mirrored ----------------------------------------------------------------------
def _struct(*fields):
    return {"type": "struct", "fields": [{"name": n, "type": t, "nullable": nullable,
                                          "metadata": {}} for n, t, nullable in fields]}


def test_schema_rule_ignores_names_and_allows_a_field_to_become_non_nullable():
    stored = _struct(("a", "string", True), ("b", "long", True))
    assert schemas.compatible(_struct(("x", "string", True), ("y", "long", False)), stored)
    assert not schemas.compatible(_struct(("a", "string", True), ("b", "integer", True)), stored)
    assert not schemas.compatible(_struct(("a", "string", True)), stored)
    strict = _struct(("a", "string", False))
    assert not schemas.compatible(_struct(("a", "string", True)), strict)
    assert schemas.difference(_struct(("a", "string", True), ("b", "long", True),
                                      ("c", "double", True)), stored) == \
        "2 -> 3 fields (added c)"


def test_pinned_settings_name_what_the_job_sets_and_older_checkpoints_default():
    rows = pinned_settings({"spark.sql.shuffle.partitions": "2"},
                           {"spark.sql.shuffle.partitions": "8",
                            "spark.sql.streaming.stateStore.encodingFormat": "avro"},
                           {"spark.sql.shuffle.partitions": "4"})
    assert [(r.key, r.pinned, r.job_value, r.ignored, r.from_default) for r in rows] == [
        ("spark.sql.shuffle.partitions", "2", "8", True, False),
        ("spark.sql.streaming.stateStore.encodingFormat", "unsaferow", "avro", True, True)]


def test_the_demo_checks_the_function_a_rerun_names_in_its_own_job_file():
    from state_runbooks.runbooks.check_query_change.demo import DEMO_JOB_FILE, job_to_check
    assert job_to_check(True, "", "build") == (DEMO_JOB_FILE, "build_with_max")
    assert job_to_check(True, "", "build_deduplicated") == (DEMO_JOB_FILE, "build_deduplicated")
    assert job_to_check(False, "jobs/mine.py", "make") == ("jobs/mine.py", "make")
