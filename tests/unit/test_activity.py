"""The activity guard and the watch for a live writer (``safety/activity.py``, ``watch.py``) on
checkpoints held in memory, their clock set: no Spark."""
from __future__ import annotations

from memory_checkpoints import HOUR_MS, TRIGGER_MS, commit_entry, stopped_checkpoint

from state_runbooks.core.fs.base import FileEntry
from state_runbooks.safety.activity import check_activity, trigger_interval_ms
from state_runbooks.safety.watch import GuardedMoves, Watch, differences, log_changes


def test_a_stopped_query_looks_stopped_and_a_new_commit_active():
    ckpt = stopped_checkpoint()
    quiet = check_activity(ckpt)
    assert not quiet.looks_active and quiet.seen.startswith("newest log entry commits/3, written")
    ckpt.fs.write_bytes("commits/4", commit_entry(4))
    active = check_activity(ckpt)
    assert active.looks_active and active.reasons[0].startswith("commits/4 was written")
    own = {"commits/4": [e.size, e.modified_ms] for rel, e in ckpt.fs.walk("commits").items()
           if rel == "commits/4"}
    assert not check_activity(ckpt, own_writes=own).looks_active  # a change's own batch


def test_quiet_is_judged_against_the_query_own_trigger_interval():
    ckpt = stopped_checkpoint()
    assert trigger_interval_ms(ckpt) == TRIGGER_MS
    now = ckpt.fs.walk()["commits/3"].modified_ms
    assert check_activity(ckpt, quiet_minutes=0.1, now_ms=now + 7_000).looks_active
    assert not check_activity(ckpt, quiet_minutes=0.1, now_ms=now + 7_000 + HOUR_MS).looks_active
    # a slow trigger: 3 intervals of 10 minutes, longer than 5 minutes of quiet
    slow = check_activity(ckpt, quiet_minutes=0.0001, now_ms=now + 20_000)
    assert slow.looks_active and "3 x the query's trigger interval of about 10 s" in \
        slow.reasons[0]


def test_differences_name_what_appeared_went_away_and_changed():
    then = {"offsets/1": FileEntry("offsets/1", False, 5, 1), "commits/1": FileEntry(
        "commits/1", False, 5, 1), "state/0/0/1.delta": FileEntry("state/0/0/1.delta", False, 9, 1)}
    now = {"offsets/1": FileEntry("offsets/1", False, 6, 2),
           "state/0/0/1.delta": FileEntry("state/0/0/1.delta", False, 9, 4),
           "offsets/2": FileEntry("offsets/2", False, 7, 3)}
    assert differences(then, now) == ["commits/1 went away", "offsets/1 changed size (5 -> 6 "
                                      "bytes)", "offsets/2 appeared (7 bytes)",
                                      "state/0/0/1.delta was rewritten (modified 3 ms later)"]
    assert differences(then, now, ("state",)) == ["state/0/0/1.delta was rewritten (modified 3 ms "
                                                  "later)"]


def test_a_watch_expects_the_change_own_moves():
    ckpt = stopped_checkpoint()
    watch = Watch(ckpt, ckpt.fs.walk())
    backup = ckpt.spark.open(ckpt.root + ".aside")
    ckpt.fs.move_to("commits/3", backup, "commits/3")
    assert watch.signs("commits/3") == ["commits/3 went away"]
    watch.gone("commits/3")
    assert watch.signs("commits/3") == [] and watch.all_signs() == []
    backup.move_to("commits/3", ckpt.fs, "commits/3")
    watch.put("commits/3")
    assert watch.all_signs() == [] and log_changes(ckpt, ckpt.fs.walk()) == []


def test_moves_put_back_keep_a_file_the_writer_wrote_again():
    ckpt = stopped_checkpoint()
    original = ckpt.fs.read_bytes("commits/3")
    backup = ckpt.spark.open(ckpt.root + ".backup")
    mover = GuardedMoves(ckpt, ckpt.fs.walk(), backup, "stopped")
    assert mover.move_out("commits/3", "moved/commits/3")
    ckpt.fs.write_bytes("commits/3", b"v1\n{}")  # the live writer, again
    assert not mover.move_out("offsets/3", "moved/offsets/3")
    assert mover.stopped == "commits/3 appeared (5 bytes)"
    put_back, lines = mover.put_back()
    assert put_back and ckpt.fs.read_bytes("commits/3") == original
    assert backup.read_bytes("stopped/in-the-way/commits/3") == b"v1\n{}"
    assert lines == ["commits/3 was written again meanwhile: that file is in "
                     f"{backup.uri('stopped/in-the-way/commits/3')}"]
