"""Headless runs for ``state-runbooks run`` and ``state-runbooks demo``.

Each runbook runs in a child Python process (papermill) whose output, and that of its kernel and
Spark's JVM, goes to ``<out>/logs/<runbook>.log``: Spark's own logging of a demo's intentional
failures, the kernel's start-up notes and papermill's are for whoever reads the log, not a newcomer's
terminal. The terminal gets one line per runbook (a live line where it is interactive), a table of
the outputs, and, last, what failed, where, and which log holds the rest.

A run that stops with an error leaves its summary with status ``error`` (the kernel writes it, see
:func:`state_runbooks.running.start.watch_for_errors`); when it stopped before the notebook knew
where to write it, the child process writes it from papermill's error instead.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from functools import partial

from state_runbooks.common.errors import RunbookError, first_line
from state_runbooks.demos.checkpoints import remove_orphaned_demo_folders
from state_runbooks.dev.class_archive import demo_environment
from state_runbooks.dev.startup import skip_unused_iri_grammar
from state_runbooks.running.parameters import (
    check_not_placeholder,
    check_run_parameters,
    check_written_paths,
    read_parameters_file,
    resolve_relative_paths,
)
from state_runbooks.running.results import (
    Summary,
    failing_step,
    local_file,
    write_summary,
)
from state_runbooks.running.start import DEMO_ENV

from .execution import execute, summary_target

LOG_FOLDER = "logs"
_CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def runbook_name(notebook: pathlib.Path) -> str:
    """``03_inspect_state.ipynb`` -> ``inspect_state`` (the name a runbook gives its summary)."""
    return re.sub(r"^\d+_", "", notebook.stem)


# -- the child process: one runbook, its output going to the log --------------------------------
def _write_error_summary(notebook, parameters, summary_path, error_type, message, step) -> None:
    """The summary of a run that stopped before its notebook could write one (local paths only:
    a file system URI needs the notebook's Spark session)."""
    if local_file(summary_path) is None:
        return
    summary = Summary(runbook_name(notebook), parameters.get("checkpoint_path", ""), None)
    summary.set_error(error_type, message, step)
    write_summary(summary, summary_path)


def _written_since(path: str, started: float) -> bool:
    local = local_file(path)
    if local is None:
        return True  # not ours to check: the notebook wrote it or said why not
    return local.exists() and local.stat().st_mtime >= started - 1


def execute_logged(notebook: pathlib.Path, out_dir: pathlib.Path, parameters: dict) -> str | None:
    """Run one notebook here (the child's side); returns why it failed in one line, or None."""
    import papermill

    parameters = {**parameters, "summary_path": summary_target(out_dir, notebook.stem, parameters)}
    summary_path = parameters["summary_path"]
    started = time.time()
    try:
        execute(notebook, out_dir, parameters)
        return None
    except papermill.PapermillExecutionError as exc:
        print(exc, flush=True)  # the cell's traceback, for the log
        message = first_line(Exception(exc.evalue or exc.ename))  # the kernel's error as text
        if exc.ename != "RunbookFailed" and not _written_since(summary_path, started):
            match = _CELL_LINE.search(_ANSI.sub("", "\n".join(exc.traceback)))
            step = failing_step(exc.source, int(match.group(1)) if match else None)
            _write_error_summary(notebook, parameters, summary_path, exc.ename, message, step)
        return f"{exc.ename}: {message}"
    except Exception as exc:  # noqa: BLE001 - the kernel died or papermill could not start it
        traceback.print_exc()
        if not _written_since(summary_path, started):
            _write_error_summary(notebook, parameters, summary_path, type(exc).__name__,
                                 first_line(exc), "starting the notebook")
        return f"{type(exc).__name__}: {first_line(exc)}"


def main(argv: list[str] | None = None) -> int:
    """``python -m state_runbooks.cli.headless NOTEBOOK OUT PARAMETERS_JSON RESULT_JSON``."""
    skip_unused_iri_grammar()
    notebook, out_dir, parameters, result = (argv or sys.argv[1:])[:4]
    failure = execute_logged(pathlib.Path(notebook), pathlib.Path(out_dir), json.loads(parameters))
    pathlib.Path(result).write_text(json.dumps({"failure": failure}), encoding="utf-8")
    return 1 if failure else 0


# -- the parent: one line per runbook, a table, the failures last --------------------------------
@dataclass
class RunOutcome:
    notebook: pathlib.Path
    status: str  # the summary's status (ok, warning, critical, error), or "failed" without one
    seconds: float
    outputs: list[pathlib.Path]
    log: pathlib.Path | None
    failure: str | None = None  # one line: the error and its step, or the fail_on reached

    @property
    def line(self) -> str:
        return f"{self.notebook.stem:<28} {self.status:<9} {self.seconds:>5.0f} s"


def _read_summary(path: str, started: float) -> dict | None:
    local = local_file(path)
    if local is None or not _written_since(path, started):
        return None
    try:
        return json.loads(local.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _cell_progress(executed: pathlib.Path, started: float) -> str:
    """``cell 5/23`` from the executed notebook papermill saves after every cell."""
    try:
        if executed.stat().st_mtime < started:
            return ""
        cells = [c for c in json.loads(executed.read_text(encoding="utf-8"))["cells"]
                 if c["cell_type"] == "code"]
    except (OSError, ValueError, KeyError):
        return ""  # not written yet, or being written
    done = sum(c.get("metadata", {}).get("papermill", {}).get("status") == "completed"
               for c in cells)
    return f"cell {min(done + 1, len(cells))}/{len(cells)}"


class ChildRun:
    """One runbook running in a child process, its output in ``<out>/logs/<notebook>.log``: started
    when made, its outcome collected by :meth:`finish` once it has ended. ``parameters`` override
    those of ``parameters_file``. ``demo=False``: a run without a checkpoint refuses instead of
    building the demo. ``environment``: added to the child's. Refused parameters end the run at
    once: no process starts."""

    def __init__(self, notebook: pathlib.Path, out_dir: pathlib.Path, parameters: dict,
                 demo: bool, parameters_file: str = "", environment: dict | None = None):
        self.notebook, self.out_dir = notebook, out_dir
        self.started = time.time()
        self.proc: subprocess.Popen | None = None
        self.refused: RunOutcome | None = None
        self._progress = ""
        self.summary_path = summary_target(out_dir, notebook.stem, parameters)
        try:
            parameters = check_run_parameters(
                notebook, {**read_parameters_file(parameters_file), **parameters})
            # The notebook runs in another folder: a relative path means the one run from.
            parameters = resolve_relative_paths(parameters, os.getcwd())
            check_written_paths(parameters)
            self.summary_path = summary_target(out_dir, notebook.stem, parameters)
            for name, value in parameters.items():
                check_not_placeholder(name, value)
        except RunbookError as exc:  # refused before any process starts
            _write_error_summary(notebook, parameters, self.summary_path, "RunbookError",
                                 str(exc), "parameters")
            self.refused = RunOutcome(notebook, "error", time.time() - self.started,
                                      _outputs(notebook, out_dir), None,
                                      f"RunbookError: {exc} (step: parameters)")
            return

        logs = out_dir / LOG_FOLDER
        logs.mkdir(parents=True, exist_ok=True)
        self.log = logs / f"{notebook.stem}.log"
        self.result = logs / f".{notebook.stem}.result.json"
        self.result.unlink(missing_ok=True)
        env = {k: v for k, v in os.environ.items() if k != DEMO_ENV}
        env.update(environment or {})
        if not demo:
            env[DEMO_ENV] = "refuse"
        command = [sys.executable, "-m", "state_runbooks.cli.headless", str(notebook),
                   str(out_dir), json.dumps(parameters), str(self.result)]
        with open(self.log, "w", encoding="utf-8") as log_file:
            self.proc = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)

    def ended(self, timeout: float = 0) -> bool:
        """Whether the run has ended, waiting up to ``timeout`` seconds for it."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def live_line(self) -> str:
        """``03_inspect_state  running  12 s  cell 5/23``: the terminal's line while it runs."""
        executed = self.out_dir / f"{self.notebook.stem}.ipynb"
        self._progress = _cell_progress(executed, self.started) or self._progress  # "" mid-write
        return (f"{self.notebook.stem:<28} running {time.time() - self.started:>5.0f} s  "
                f"{self._progress:<12}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()

    def finish(self) -> RunOutcome:
        """The outcome of the ended run: the status its summary gives, and why it failed."""
        if self.refused is not None:
            return self.refused
        self.proc.wait()
        # A kernel stopped before its own clean-up ran (killed after the shutdown grace) leaves
        # its demo folder: it has ended now, so its folder goes.
        remove_orphaned_demo_folders()
        try:
            failure = json.loads(self.result.read_text(encoding="utf-8"))["failure"]
            self.result.unlink()
        except (OSError, ValueError, KeyError):
            failure = f"the run stopped with exit code {self.proc.returncode}"
        summary = _read_summary(self.summary_path, self.started)
        status = summary["status"] if summary else ("failed" if failure else "ok")
        if summary and summary.get("error"):
            error = summary["error"]
            failure = f"{error['type']}: {error['message']} (step: {error['step']})"
        return RunOutcome(self.notebook, status, time.time() - self.started,
                          _outputs(self.notebook, self.out_dir), self.log, failure)


def _outputs(notebook: pathlib.Path, out_dir: pathlib.Path) -> list[pathlib.Path]:
    candidates = [out_dir / f"{notebook.stem}{suffix}"
                  for suffix in (".ipynb", ".html", ".summary.json")]
    return [p for p in candidates if p.exists()]


def report(outcomes: list[RunOutcome], out_dir: pathlib.Path) -> str:
    """The table printed after the runs: status and output files; then each failure, with its log."""
    lines = ["", f"{'runbook':<28} {'status':<9} {'time':>7}  outputs in {out_dir}/"]
    for o in outcomes:
        names = [p.name for p in o.outputs]
        names[1:] = [n.replace(o.notebook.stem, "", 1) for n in names[1:]]  # .html .summary.json
        lines.append(f"{o.line}  {' '.join(names)}")
    if any(o.log for o in outcomes):
        lines.append(f"Spark, kernel and papermill output of each run: {out_dir / LOG_FOLDER}/")
    for o in outcomes:
        if o.failure:
            where = f" (log: {o.log})" if o.log else ""
            lines.append(f"FAILED {o.notebook.stem}: {o.failure}{where}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())


def demo_starts(notebooks: list[pathlib.Path], out_dir: pathlib.Path) -> list:
    """A start per notebook of its run on its demo (``make demo``, ``make book``): their JVMs map
    Spark's classes from the archive make records."""
    environment = demo_environment()
    return [partial(ChildRun, notebook, out_dir, {}, True, "", environment)
            for notebook in notebooks]
