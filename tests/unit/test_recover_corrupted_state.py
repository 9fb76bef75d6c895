"""05's file logic without Spark: what damage each log file shows and what Spark does with it
(log_damage.py), what the files say (structure.py), what a rollback moves (plan.py), on
checkpoints held in memory, and what the demo's break refuses to touch (demo.py)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from memory_checkpoints import QUERY_ID, commit_entry, sidecar, snapshot, stopped_checkpoint

from state_runbooks.common.errors import RunbookError
from state_runbooks.runbooks.recover_corrupted_state.demo import BrokenDemo, break_demo, run_demo
from state_runbooks.safety.diagnosis.diagnose import Diagnosis
from state_runbooks.safety.diagnosis.log_damage import (
    Logs,
    damage_of,
    file_kind,
    log_findings,
    missing_findings,
    query_id_hint,
)
from state_runbooks.runbooks.recover_corrupted_state.plan import (
    REPLAY_FROM_START,
    plan_lines,
    plan_rollback,
)
from state_runbooks.safety.diagnosis.structure import Structure, log_batch_id


@pytest.mark.parametrize("rel,kind", [
    ("metadata", "metadata"), ("offsets/3", "offsets"), ("commits/12", "commits"),
    ("offsets/.3.crc", None), ("offsets/3/x", None), ("sources/0/0", "sources"),
    ("state/0/_metadata/metadata", "operator_metadata"), ("state/1/_metadata/v2/4",
                                                          "operator_metadata"),
    ("state/0/0/_metadata/schema", "state_schema"), ("state/0/0/4.delta", None)])
def test_file_kinds(rel, kind):
    assert file_kind(rel) == kind


@pytest.mark.parametrize("kind,data,damage", [
    ("commits", b"", "empty"), ("commits", b"v1", "truncated"), ("commits", b"v1\n", "truncated"),
    ("commits", b"v1\n{\"nextBatch", "truncated"), ("commits", b"\x00\x01garbage", "garbage"),
    ("commits", b"xx\n{}", "garbage"), ("metadata", b"{\"other\": 1}", "garbage"),
    ("metadata", b"{\"id\": \"x", "truncated"), ("commits", commit_entry(3), None),
    ("metadata", json.dumps({"id": QUERY_ID}).encode(), None)])
def test_damage_of_a_log_file(kind, data, damage):
    found = damage_of(kind, data, None)
    assert (found[0] if found else None) == damage


def test_damage_against_the_sidecar():
    good = commit_entry(3)
    assert damage_of("commits", good, sidecar(good)) is None
    changed = good.replace(b"3000", b"4000")
    assert damage_of("commits", changed, sidecar(good))[0] == "checksum"
    long = b"v1\n" + json.dumps({"nextBatchWatermarkMs": 0, "pad": "x" * 600}).encode()
    damage, what = damage_of("commits", long[:100], sidecar(long))
    assert damage == "truncated" and what.startswith("cut short: 100 bytes, but its .crc sidecar "
                                                     "was written for 513..1024 bytes")


def test_the_query_id_comes_from_what_is_left_else_a_backup():
    assert query_id_hint(f'{{"id":"{QUERY_ID}'.encode(), {}) == (
        QUERY_ID, "what is left of the damaged file")
    assert query_id_hint(b"\x00", {"b/copy/metadata": f'{{"id":"{QUERY_ID}"}}'.encode()}) == (
        QUERY_ID, "b/copy/metadata")
    assert query_id_hint(None, {})[0] is None


def findings(ckpt, has_crc: bool = False) -> dict:
    raw, inventory = ckpt.fs.raw(), ckpt.fs.raw().walk()
    logs = Logs(ckpt.spark, raw, ckpt.root, inventory, ckpt.offset_batch_ids,
                ckpt.commit_batch_ids, has_crc)
    found = log_findings(logs) + missing_findings(logs)
    return {f["path"]: f for f in found}


def test_a_healthy_checkpoint_has_no_findings_even_against_its_sidecars():
    ckpt = stopped_checkpoint()
    assert findings(ckpt, has_crc=True) == {}
    structure = Structure(ckpt, ckpt.inventory())
    assert structure.problems == {} and structure.retained() == (0, 3)
    assert structure.operators[0]["versions"] == (1, 4)


def test_the_newest_commit_damaged_moves_aside_older_ones_stay():
    ckpt = stopped_checkpoint()
    ckpt.fs.write_bytes("commits/3", b"v1", overwrite=True)
    ckpt.fs.write_bytes("commits/1", b"v1\n{", overwrite=True)
    found = findings(ckpt)
    assert (found["commits/3"]["critical"], found["commits/3"]["moves"],
            found["commits/3"]["target"]) == (True, ["commits/3"], 2)
    assert found["commits/1"]["critical"] is False and found["commits/1"]["moves"] == []


def test_a_damaged_newest_offsets_entry_moves_its_batch():
    ckpt = stopped_checkpoint()
    ckpt.fs.write_bytes("offsets/3", b"v1\n{\"batchWatermarkMs\":0", overwrite=True)
    found = findings(ckpt)["offsets/3"]
    assert found["critical"] and found["moves"] == ["commits/3", "offsets/3"]
    assert found["target"] == 2 and "Spark re-runs batch 3 from batch 2's offsets" in \
        found["problem"]


def test_a_bytes_change_shows_against_the_sidecar_only():
    ckpt = stopped_checkpoint()
    ckpt.fs.write_bytes("commits/3", commit_entry(3).replace(b"3000", b"4000"), overwrite=True)
    assert findings(ckpt) == {}
    assert findings(ckpt, has_crc=True)["commits/3"]["damage"] == "checksum"


def test_damaged_metadata_takes_the_query_id_from_a_backup_beside_it():
    ckpt = stopped_checkpoint()
    backup = ckpt.spark.open(ckpt.root + ".recovery-20250101T000000Z")
    backup.write_bytes("copy/metadata", json.dumps({"id": QUERY_ID}).encode())
    ckpt.fs.write_bytes("metadata", b"\x00\x00", overwrite=True)
    found = findings(ckpt)["metadata"]
    assert found["critical"] and found["moves"] == []
    assert f'write {{"id":"{QUERY_ID}"}} into metadata (the id from ' \
           f'{backup.root}/copy/metadata)' in found["problem"]


def test_missing_logs_a_restart_fails_on():
    ckpt = stopped_checkpoint()
    aside = ckpt.spark.open("mem:/aside")
    ckpt.fs.move_to("offsets/3", aside, "offsets/3")
    ckpt.fs.move_to("metadata", aside, "metadata")
    found = findings(ckpt)
    assert found["commits/3"]["damage"] == "missing offsets"
    assert found["commits/3"]["moves"] == ["commits/3"] and found["commits/3"]["target"] == 2
    assert found["metadata"]["damage"] == "missing"


def test_what_the_files_say_about_gaps_a_batch_in_flight_and_a_lost_state_file():
    ckpt = stopped_checkpoint(batches=5)
    aside = ckpt.spark.open("mem:/aside")
    ckpt.fs.move_to("commits/4", aside, "commits/4")  # batch 4 in flight
    ckpt.fs.move_to("offsets/1", aside, "offsets/1")  # an older gap
    ckpt.fs.move_to("state/0/1/3.delta", aside, "3.delta")  # version 3 of partition 1
    ckpt.refresh()
    structure = Structure(ckpt, ckpt.inventory())
    problems = structure.problems
    assert problems["offsets/1"].problem == "missing: the offsets log has a gap"
    assert problems["offsets/4"].problem.startswith("offsets entry without a commit: batch 4")
    assert structure.in_flight == [4]
    lost = [p for p in problems.values() if p.path == "state/0/1/3.delta"]
    assert lost and lost[0].first_batch_id == 2


def diagnosis(ckpt, last_good: int | None, problems=(), can_replay: bool = True) -> Diagnosis:
    """What diagnose() concludes, given here: the last batch whose state Spark loads."""
    inventory = ckpt.inventory()
    structure = Structure(ckpt, inventory)
    return Diagnosis(ckpt.root, "hdfs", ckpt.offset_batch_ids, ckpt.commit_batch_ids,
                     structure.in_flight, structure.operators, structure.retained(), 10,
                     len(inventory), 0, list(problems), [], [], last_good, can_replay,
                     inventory=inventory)


def test_a_rollback_to_the_last_good_batch_moves_the_later_batches():
    ckpt = stopped_checkpoint()
    plan = plan_rollback(ckpt, diagnosis(ckpt, last_good=1))
    assert plan.target_batch_id == 1
    assert plan.moves == ["commits/3", "commits/2", "offsets/3", "offsets/2",
                          "state/0/0/3.delta", "state/0/0/4.delta", "state/0/1/3.delta",
                          "state/0/1/4.delta"]
    assert plan_lines(plan, limit=2) == ["target: batch 1; 8 files to move aside",
                                         "  move commits/3", "  move commits/2",
                                         "  ... and 6 more",
                                         "  (each with its .crc sidecar, where there is one)"]


def test_nothing_moves_when_the_committed_state_loads():
    ckpt = stopped_checkpoint()
    plan = plan_rollback(ckpt, diagnosis(ckpt, last_good=3))
    assert (plan.target_batch_id, plan.moves) == (3, [])
    assert plan.note == "nothing to move: the committed state loads"


def test_no_batch_loads_replays_from_the_start_else_refuses():
    ckpt = stopped_checkpoint()
    plan = plan_rollback(ckpt, diagnosis(ckpt, last_good=None))
    assert plan.target_batch_id == REPLAY_FROM_START
    assert {m.split("/")[0] for m in plan.moves} == {"commits", "offsets", "state"}
    assert plan_lines(plan)[0].startswith("target: before batch 0 (replay everything)")
    refused = plan_rollback(ckpt, diagnosis(ckpt, last_good=None, can_replay=False))
    assert refused.target_batch_id is None and refused.note.startswith("no retained batch loads")


def test_a_target_that_does_not_load_or_is_outside_the_range_is_refused():
    ckpt = stopped_checkpoint()
    diag = diagnosis(ckpt, last_good=1)
    with pytest.raises(RunbookError, match="target_batch_id=2: the state of that batch does not "
                                           "load"):
        plan_rollback(ckpt, diag, 2)
    with pytest.raises(RunbookError, match="outside the retained range 0..3"):
        plan_rollback(ckpt, diag, 7)
    assert plan_rollback(ckpt, diag, 0).moves[:2] == ["commits/3", "commits/2"]


def test_a_damaged_newest_commit_is_repaired_by_moving_it_alone():
    ckpt = stopped_checkpoint()
    ckpt.fs.write_bytes("commits/3", b"v1", overwrite=True)
    structure = Structure(ckpt, ckpt.inventory())
    plan = plan_rollback(ckpt, diagnosis(ckpt, 3, structure.problems.values()))
    assert (plan.target_batch_id, plan.moves) == (2, ["commits/3"])
    assert plan.leaves == ["offsets/3"]  # the batch runs again over the offsets it logged
    assert plan.note.startswith("1 damaged log file(s) to move aside: commits/3 (cut short")


def test_log_batch_ids():
    assert [log_batch_id(r) for r in ("offsets/3", "commits/10", "offsets/.3.crc", "state/0/1")] \
        == [3, 10, None, None]


# -- the demo's break: the demo only ---------------------------------------------------------------
def test_the_break_refuses_a_checkpoint_given_and_changes_none_of_its_files():
    ckpt = stopped_checkpoint()
    files = snapshot(ckpt.spark)
    with pytest.raises(RunbookError, match="only the demo checkpoint is broken on purpose"):
        break_demo(SimpleNamespace(is_demo=False, spark=ckpt.spark, checkpoint=ckpt))
    assert snapshot(ckpt.spark) == files


def test_a_demo_whose_files_cannot_change_is_left_intact_and_its_demo_does_nothing():
    ckpt = SimpleNamespace(fs=SimpleNamespace(can_modify=False))  # Spark Connect, no dbutils.fs
    rb = SimpleNamespace(is_demo=True, spark=None, checkpoint=ckpt)
    broken = break_demo(rb)
    assert broken == BrokenDemo("") and not broken.broke
    assert broken.setup_line().startswith("demo: this session cannot change files")
    rb.demo_prepared = broken
    diag = object()  # the main step's diagnosis, passed on untouched
    demo = run_demo(rb, diag)
    assert demo.broken_file == "" and demo.diagnosis is diag and demo.rolled_back is None


def test_the_demo_s_own_steps_need_the_break_of_set_up():
    with pytest.raises(RunbookError, match="prepare_demo=break_demo"):
        run_demo(SimpleNamespace(demo_prepared=None), object())


def test_the_passes_on_an_active_checkpoint_are_said_in_words():
    """A pass is the whole diagnosis on a new listing; a problem counts when two in a row find it."""
    import dataclasses

    ckpt = stopped_checkpoint()
    once = diagnosis(ckpt, last_good=1)
    assert once.passes_words() == ("1 pass (a pass: the whole diagnosis on a new listing of the "
                                   "checkpoint): it found nothing to confirm on a second one")
    twice = dataclasses.replace(once, passes=2).passes_words()
    assert twice.startswith("2 passes (a pass: the whole diagnosis on a new listing")
    assert "a problem counts only when two passes in a row find it" in twice
    assert "pass(es)" not in twice
