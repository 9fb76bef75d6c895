"""One Spark Connect server and one standalone cluster per test run, however many processes run the
tests (pytest-xdist workers): the first process that needs a server starts it and records its
address and process ids; the others use that one; the run's main process stops them all at its
end, after every worker has finished.

The record folder is named by an environment variable that the main process sets before the
workers start, so every worker of the run (and only they) finds it.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Callable, NamedTuple

from state_runbooks.session.local_servers import stop_server

RUN_FOLDER_ENV = "STATE_RUNBOOKS_TEST_SERVERS"


class Running(NamedTuple):
    url: str
    pids: list[int]  # stopped in this order


def open_run_folder() -> None:
    """In the run's main process, before any worker starts."""
    os.environ[RUN_FOLDER_ENV] = tempfile.mkdtemp(prefix="state-runbooks-test-servers-")


def shared(name: str, start: Callable[[], Running]) -> Running:
    """The run's server ``name``: started with ``start()`` by the first process asking for it."""
    folder = Path(os.environ[RUN_FOLDER_ENV])
    record = folder / f"{name}.json"
    with _locked(folder / f"{name}.lock"):
        if not record.exists():
            record.write_text(json.dumps(start()._asdict()))
        return Running(**json.loads(record.read_text()))


def stop_all() -> None:
    """In the run's main process, after every worker has finished: stop what the run started."""
    folder = os.environ.pop(RUN_FOLDER_ENV, None)
    if folder is None:
        return
    for record in Path(folder).glob("*.json"):
        for pid in Running(**json.loads(record.read_text())).pids:
            stop_server(pid)
    for leftover in Path(folder).iterdir():
        leftover.unlink()
    os.rmdir(folder)


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
