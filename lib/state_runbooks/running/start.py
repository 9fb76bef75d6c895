"""The common start and end of every runbook notebook.

``start_runbook`` turns the common parameters (``checkpoint_path``, ``spark_master``,
``summary_path``, ``fail_on``) into a session, a validated checkpoint (the runbook's demo when no
path is given) and an empty summary, after the runbook's own parameters and checks have passed;
``RunbookContext.finish`` records and writes the summary and fails the run when its status reaches
``fail_on``. A runbook that reads something else than a checkpoint (06: an event log, a live query)
starts through it too, naming those ``sources``.

A run that stops before its verdict still leaves a summary: ``start_runbook`` first watches the
notebook's cells (:func:`watch_for_errors`), and the first cell that raises writes the summary with
status ``error``, the one-line message and the statement that raised.

With no checkpoint a runbook builds its demo: that is what a person opening the notebook wants. A
scheduled or command-line run must not inspect a demo by accident: ``state-runbooks run`` sets
``STATE_RUNBOOKS_DEMO=refuse`` unless ``--demo`` is given (:func:`check_demo_wanted`), and schedule
files ship with a ``<placeholder>`` that refuses until it is set
(:func:`state_runbooks.running.parameters.check_not_placeholder`).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError, RunbookFailed
from state_runbooks.common.spark_settings import CHECKPOINT_FORMAT_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos.checkpoints import DemoRun, build_demo_checkpoint
from state_runbooks.session.spark_session import get_spark, is_connect

from .parameters import check_not_placeholder, check_notebook_parameters
from .results import Summary, check_fail_on, failing_step, finish, record_error

DEMO_ENV = "STATE_RUNBOOKS_DEMO"  # "refuse": a run that names no checkpoint fails instead


def check_demo_wanted(runbook: str, target: str = "checkpoint_path") -> None:
    """Refuse to build the demo in a run that asked not to (``STATE_RUNBOOKS_DEMO=refuse``)."""
    if os.environ.get(DEMO_ENV) == "refuse":
        raise RunbookError(f"{runbook}: no {target} given, and a scheduled or command-line run "
                           f"builds no demo: set -p {target} ..., or pass --demo for the demo")


class _ErrorRecorder:
    """A ``post_run_cell`` callback: the first cell error writes the summary with status error."""

    def __init__(self, shell, summary: Summary, summary_path: str):
        self.shell, self.summary, self.summary_path = shell, summary, summary_path
        self.spark = None

    def __call__(self, result) -> None:
        exc = result.error_in_exec
        if exc is None or isinstance(exc, RunbookFailed):  # RunbookFailed: finish() wrote it
            return
        step = failing_step(result.info.raw_cell, self._cell_line(exc))
        try:
            record_error(self.summary, exc, step, self.summary_path, self.spark)
        except Exception as write_error:  # noqa: BLE001 - the cell's own error matters more
            print(f"the error summary could not be written: {write_error}")

    def _cell_line(self, exc: BaseException) -> int | None:
        """The line of the cell that raised: the traceback's frame running in the notebook's
        namespace (library frames come after it)."""
        line, tb = None, exc.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_code.co_name == "<module>" and frame.f_globals is self.shell.user_ns:
                line = tb.tb_lineno
            tb = tb.tb_next
        return line


_recorder: _ErrorRecorder | None = None


def watch_for_errors(summary: Summary, summary_path: str) -> _ErrorRecorder | None:
    """In a notebook kernel: from now on, a cell that raises writes ``summary`` with status error.
    Running the start again (Jupyter) replaces the previous watch. Outside IPython: nothing."""
    global _recorder
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    if _recorder is not None and _recorder in shell.events.callbacks["post_run_cell"]:
        shell.events.unregister("post_run_cell", _recorder)
    _recorder = _ErrorRecorder(shell, summary, summary_path)
    shell.events.register("post_run_cell", _recorder)
    return _recorder


@dataclass
class RunContext:
    """What every runbook run holds: its session and its summary, and how it ends."""
    name: str
    spark: object
    summary: Summary
    summary_path: str
    fail_on: str

    def finish(self) -> dict:
        """Record and write the summary; fail the run when its status reaches ``fail_on``."""
        return finish(self.summary, self.summary_path, self.fail_on, self.spark)


def _start_session(name: str, spark_master: str, summary_path: str, fail_on: str,
                   checkpoint_path: str, placeholders: dict | None, checks: Callable | None,
                   demo_target: str | None) -> tuple[Summary, object]:
    """Watch the cells, check everything that needs no Spark, then start Spark."""
    summary = Summary(runbook=name, checkpoint_path=checkpoint_path, spark_version=None)
    recorder = watch_for_errors(summary, summary_path)
    check_notebook_parameters()  # "false" from a scheduler becomes False, or the run stops here
    check_fail_on(fail_on)
    for parameter, value in {"checkpoint_path": checkpoint_path, **(placeholders or {})}.items():
        check_not_placeholder(parameter, value)
    if checks is not None:
        checks()
    if demo_target is not None:
        check_demo_wanted(name, demo_target)
    spark = get_spark(spark_master)
    summary.spark_version = spark.version
    if recorder is not None:
        recorder.spark = spark  # summaries to file system URIs are written through the session
    return summary, spark


@dataclass
class RunbookContext(RunContext):
    """A run on one checkpoint: the one given, or the runbook's demo. (A runbook with other
    ``sources`` may run without one: ``checkpoint`` is then None.)"""
    checkpoint: Checkpoint | None
    demo: DemoRun | None
    prepared: object = None  # what the runbook's prepare(spark) returned
    demo_prepared: object = None  # what the runbook's prepare_demo(rb) returned; the demo only

    @property
    def is_demo(self) -> bool:
        return self.demo is not None

    def describe(self) -> str:
        """One line saying what this run works on (a damaged ``metadata`` file is said, not
        raised: diagnosing it is 05's job)."""
        ckpt = self.checkpoint
        if ckpt is None:
            return f"{self.name} on no checkpoint, Spark {self.spark.version}"
        try:
            query = ckpt.query_id
        except RunbookError:
            query = "unknown (its metadata file is damaged)"
        origin = (f"demo checkpoint ({self.demo.workload}, {self.demo.batches} batches, "
                  f"{self.demo.provider})" if self.demo else "checkpoint")
        fmt = f", checkpoint format v{ckpt.format_version}" if ckpt.format_version > 1 else ""
        return (f"{self.name} on {origin} {ckpt.root}: query {query}, "
                f"last committed batch {ckpt.last_committed_batch_id}, "
                f"provider {ckpt.provider_kind}{fmt}, Spark {self.spark.version}")


def start_runbook(name: str, checkpoint_path: str = "", spark_master: str = "",
                  summary_path: str = "", fail_on: str = "never", demo: dict | None = None,
                  require_state: bool = True, *, placeholders: dict | None = None,
                  checks: Callable[[], object] | None = None,
                  prepare: Callable[[object], object] | None = None,
                  prepare_demo: Callable[[RunbookContext], object] | None = None,
                  sources: dict | None = None) -> RunbookContext:
    """The common start of every runbook: check, start Spark, open the checkpoint (or build the
    demo). In order:

    1. From here on a cell that raises writes the summary with status ``error`` (in a notebook).
    2. Before Spark starts, each refusing in one line: every parameter is checked against the
       type its parameters cell declares and turned into it (``-p force false`` is ``False``);
       ``fail_on``; ``checkpoint_path`` and the ``placeholders`` (more parameters, by name, that a
       schedule file may leave as ``<placeholder>``) are set; the runbook's own ``checks()`` pass;
       and a run that would build the demo is not a scheduled or command-line one without
       ``--demo``.
    3. Spark starts (``spark_master``: ``sc://`` for Spark Connect; empty: the active session,
       else local). ``prepare(spark)``, the runbook's own first step on the session (01 plans the
       provider), runs before the checkpoint is opened; what it returns is ``prepared``.
    4. The checkpoint given is opened (``require_state``: it must have stateful operators), or with
       none the demo checkpoint is built (``demo``: the options of ``build_demo_checkpoint``).
    5. On the demo only, ``prepare_demo(rb)``, the runbook's own set-up of it (05 breaks it on
       purpose), runs on the context; what it returns is ``demo_prepared``. A checkpoint given
       never reaches it.

    ``sources``: for a runbook that can also read something else (06: ``event_log_path``,
    ``query_name``, ``query_id``), those parameters by name. The checkpoint is then optional and no
    demo checkpoint is built; with neither a checkpoint nor a source, the run is on the runbook's
    own demo, refused in step 2 as above, naming the first source.

    The checks and ``prepare`` are functions, so a notebook passes ``lambda: ...`` over its
    parameters: they then see them with their declared types."""
    demo_target = None
    if not checkpoint_path:
        if sources is None:
            demo_target = "checkpoint_path"
        elif not any(str(value or "").strip() for value in sources.values()):
            demo_target = next(iter(sources), "checkpoint_path")
    summary, spark = _start_session(name, spark_master, summary_path, fail_on, checkpoint_path,
                                    placeholders, checks, demo_target)
    prepared = prepare(spark) if prepare is not None else None
    demo_run = ckpt = None
    if not checkpoint_path and sources is None:
        demo_run = build_demo_checkpoint(spark, **(demo or {}))
        checkpoint_path = demo_run.checkpoint_path
    if checkpoint_path:
        ckpt = Checkpoint(spark, checkpoint_path, require_state=require_state)
        summary.checkpoint_path = ckpt.root
        if is_connect(spark) and ckpt.format_version > 1:
            # Spark Connect plans a read when it runs, not when it is built: the reads of this
            # run need the checkpoint's format set in the session for the whole run.
            spark.conf.set(CHECKPOINT_FORMAT_CONF, str(ckpt.format_version))
    rb = RunbookContext(name, spark, summary, summary_path, fail_on, ckpt, demo_run, prepared)
    if demo_run is not None and prepare_demo is not None:
        rb.demo_prepared = prepare_demo(rb)
    return rb
