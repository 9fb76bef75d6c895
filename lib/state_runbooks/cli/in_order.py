"""Runs side by side, their lines in order: ``state-runbooks demo`` runs two runbooks at a time
(each mostly waits on one core: its kernel's Python or its JVM's driver thread), and the terminal
still gets one line per runbook, in the order of the runbooks, as if they had run one by one.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

POLL_SECONDS = 0.5  # how often the live line moves, and how late an ended run behind it is seen
_CLEAR = "\r" + " " * 70 + "\r"


def default_jobs() -> int:
    """Two runbooks at a time where there are two cores or more: each keeps about one busy (its
    kernel, its JVM's driver), and two at a time finish the demo sooner; more would mostly wait
    for the same cores and hold another JVM's memory."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(2, cores or 1)


class Run(Protocol):
    def ended(self, timeout: float = 0) -> bool: ...
    def live_line(self) -> str: ...
    def finish(self): ...  # its outcome, which has a ``line``
    def stop(self) -> None: ...


def run_in_order(starts: Sequence[Callable[[], Run]], jobs: int = 1,
                 interactive: bool = False) -> list:
    """Start the runs in the order given, up to ``jobs`` running at a time; print each outcome's
    line as soon as its run and every run before it have ended. Where the terminal is interactive,
    a live line follows the first run not yet printed. Ctrl-C stops every run still going."""
    outcomes: list = [None] * len(starts)
    running: dict[int, Run] = {}
    started = printed = 0
    try:
        while printed < len(starts):
            while started < len(starts) and len(running) < max(jobs, 1):
                running[started] = starts[started]()
                started += 1
            head = running.get(printed)
            if head is not None:
                if interactive:
                    sys.stdout.write("\r" + head.live_line())
                    sys.stdout.flush()
                head.ended(timeout=POLL_SECONDS)  # returns at once when it ends
            for index, run in list(running.items()):
                if run.ended():
                    outcomes[index] = run.finish()
                    del running[index]
            while printed < len(starts) and outcomes[printed] is not None:
                if interactive:
                    sys.stdout.write(_CLEAR)
                print(outcomes[printed].line, flush=True)
                printed += 1
    except KeyboardInterrupt:
        for run in running.values():
            run.stop()
        raise
    return outcomes
