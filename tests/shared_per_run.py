"""What the worker processes of one test run (pytest-xdist) share: one Spark Connect server, one
standalone cluster, and the demo checkpoints the fixtures build. The first process that needs one
makes it and records it (an address and process ids, or a checkpoint's path and its query's
progress); the others read the record and use the same one. The run's main process stops the
servers and removes the folder at its end, after every worker has finished.

The record folder is named by an environment variable that the main process sets before the
workers start, so every worker of the run (and only they) finds it.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, NamedTuple

from state_runbooks.session.local_servers import stop_server

RUN_FOLDER_ENV = "STATE_RUNBOOKS_TEST_RUN"


class Running(NamedTuple):
    url: str
    pids: list[int]  # stopped in this order


def open_run_folder() -> None:
    """In the run's main process, before any worker starts."""
    os.environ[RUN_FOLDER_ENV] = tempfile.mkdtemp(prefix="state-runbooks-test-run-")


def shared(name: str, make: Callable[[Path], dict]) -> dict:
    """The run's record ``name``: made by the first process asking for it, with ``make(folder)``
    given a folder of its own; read back by every process asking later (they wait meanwhile)."""
    root = Path(os.environ[RUN_FOLDER_ENV])
    record = root / f"{name}.json"
    with _locked(root / f"{name}.lock"):
        if not record.exists():
            folder = root / name
            shutil.rmtree(folder, ignore_errors=True)  # left by a process that failed to make it
            folder.mkdir()
            record.write_text(json.dumps(make(folder)))
        return json.loads(record.read_text())


def shared_server(name: str, start: Callable[[], Running]) -> Running:
    """The run's server ``name``: started with ``start()`` by the first process asking for it."""
    return Running(**shared(name, lambda _folder: start()._asdict()))


def stop_all() -> None:
    """In the run's main process, after every worker has finished: stop the servers the run
    started and remove what the workers made."""
    folder = os.environ.pop(RUN_FOLDER_ENV, None)
    if folder is None:
        return
    for record in Path(folder).glob("*.json"):
        for pid in json.loads(record.read_text()).get("pids", []):
            stop_server(pid)
    shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
