"""Runs side by side, their lines in order (``state-runbooks demo -j 2``): fake runs that end when
told, no process or Spark."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest

from state_runbooks.cli import in_order
from state_runbooks.cli.in_order import run_in_order


@dataclass
class Outcome:
    line: str


class FakeRun:
    """Ends after ``seconds``; records when it started and whether it was stopped."""

    def __init__(self, name: str, seconds: float, log: list):
        self.name, self.seconds, self.log = name, seconds, log
        self.start = time.monotonic()
        self.stopped = False
        log.append(f"start {name}")

    def ended(self, timeout: float = 0) -> bool:
        left = self.start + self.seconds - time.monotonic()
        if left > 0 and timeout:
            time.sleep(min(left, timeout))
        return self.stopped or time.monotonic() >= self.start + self.seconds

    def live_line(self) -> str:
        return f"{self.name} running"

    def finish(self) -> Outcome:
        self.log.append(f"end {self.name}")
        return Outcome(f"{self.name} ok")

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch):
    monkeypatch.setattr(in_order, "POLL_SECONDS", 0.01)


def _starts(durations: dict, log: list, made: list | None = None):
    def start(name, seconds):
        run = FakeRun(name, seconds, log)
        if made is not None:
            made.append(run)
        return run
    return [lambda n=n, s=s: start(n, s) for n, s in durations.items()]


def test_lines_come_in_the_order_given_whichever_run_ends_first(capsys):
    log = []
    outcomes = run_in_order(_starts({"a": 0.3, "b": 0.05, "c": 0.05}, log), jobs=2)
    assert capsys.readouterr().out.splitlines() == ["a ok", "b ok", "c ok"]
    assert [o.line for o in outcomes] == ["a ok", "b ok", "c ok"]
    # b's end frees its place for c while a still runs
    assert log.index("start c") < log.index("end a")


def test_never_more_runs_at_a_time_than_jobs():
    log, made, most = [], [], [0]

    def watch():
        while len(made) < 5 or not all(r.ended() for r in made):
            most[0] = max(most[0], sum(not r.ended() for r in made))
            time.sleep(0.002)
    watcher = threading.Thread(target=watch)
    watcher.start()
    run_in_order(_starts({n: 0.05 for n in "abcde"}, log, made), jobs=2)
    watcher.join()
    assert most[0] == 2


def test_one_job_runs_one_after_the_other(capsys):
    log = []
    run_in_order(_starts({"a": 0.05, "b": 0.01}, log), jobs=1)
    assert log == ["start a", "end a", "start b", "end b"]
    assert capsys.readouterr().out.splitlines() == ["a ok", "b ok"]


def test_a_run_that_ended_before_it_began_takes_no_place(capsys):
    """A run refused before any process started (bad parameters) ends at once."""
    log = []
    run_in_order(_starts({"refused": 0, "b": 0.05}, log), jobs=1)
    assert capsys.readouterr().out.splitlines() == ["refused ok", "b ok"]


def test_the_live_line_follows_the_first_run_not_yet_printed(capsys):
    run_in_order(_starts({"a": 0.1, "b": 0.02}, []), jobs=2, interactive=True)
    out = capsys.readouterr().out
    assert "\ra running" in out and "\rb running" not in out
    # each printed line starts on a cleared line
    assert out.endswith(in_order._CLEAR + "a ok\n" + in_order._CLEAR + "b ok\n")


def test_ctrl_c_stops_every_run_still_going():
    made = []

    class Interrupted(FakeRun):
        def ended(self, timeout: float = 0) -> bool:
            if timeout:  # the wait on the first run, with both started
                raise KeyboardInterrupt
            return super().ended()

    starts = [lambda n=n: made.append(Interrupted(n, 60, [])) or made[-1] for n in "ab"]
    with pytest.raises(KeyboardInterrupt):
        run_in_order(starts, jobs=2)
    assert [r.stopped for r in made] == [True, True]
