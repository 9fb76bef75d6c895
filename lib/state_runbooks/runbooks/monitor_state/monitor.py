"""The runbook's start and end: choose the source, build the history, record the summary.

Sources, one at a time: an event log (``event_log_path``), a query running in this session
(``query_name`` / ``query_id``, watched for ``watch_seconds``), or with neither the demo: a stateful
query run in a child process with the event log on, whose log is then read like any other.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import EXECUTOR_INSTANCES_CONF, MASTER_CONF
from state_runbooks.demos.event_logs import DemoLog, write_demo_event_log
from state_runbooks.running.start import RunContext, start_runbook
from state_runbooks.session.spark_session import is_connect

from . import event_log, listener
from .event_log import KEPT_PROPERTIES
from .history import History, build_history, operators_summary
from .verdicts import Verdict

RUNBOOK = "monitor_state"


@dataclass
class MonitorRun(RunContext):
    history: History = None
    source: dict = field(default_factory=dict)  # kind (event_log, live, demo), path, app_id, ...
    demo: DemoLog | None = None
    log: event_log.EventLog | None = None
    applications: list = field(default_factory=list)

    @property
    def is_demo(self) -> bool:
        return self.demo is not None

    def describe(self) -> str:
        """One line saying what this run watches."""
        h = self.history
        if self.demo:
            origin = (f"the demo event log {self.source['path']} ({self.demo.codec}, "
                      f"{'rolling' if self.demo.rolling else 'single file'})")
        elif self.source["kind"] == "event_log":
            origin = f"event log {self.source['path']}"
        else:
            origin = f"this session, watched for {self.source['watch_seconds']} s"
        name = f"'{h.query_name}' " if h.query_name else ""
        return (f"{RUNBOOK} on {origin}: query {name}{h.query_id}, {h.batches_seen} batches "
                f"({_batch_range(h)}), {len(h.operator_names())} stateful operator(s), "
                f"Spark {self.spark.version}")

    def source_lines(self) -> list[str]:
        """What the source holds: applications and queries (event logs), or the watched query."""
        if self.log is None:
            return [f"watched query {self.history.query_name or '(unnamed)'} "
                    f"({self.history.query_id}): {self.history.batches_seen} batches"]
        lines = [f"{len(self.applications)} application(s) at {self.source['path']}, newest first: "
                 + ", ".join(a.app_id for a in self.applications[:5])
                 + (" ..." if len(self.applications) > 5 else "")]
        files = next(a.files for a in self.applications if a.app_id == self.log.app_id)
        lines.append(f"read {self.log.app_id} ({self.log.app_name}): {len(files)} file(s), "
                     f"{', '.join(sorted({f.codec for f in files}))}; queries: "
                     f"{self.log.describe_queries()}")
        facts = {k: v for k, v in self.history.facts.items() if v not in (None, "")}
        lines.append("facts for the verdicts: " + ", ".join(f"{k}={v}" for k, v in facts.items()))
        return lines



def _batch_range(h: History) -> str:
    if not h.batches_seen:
        return "none"
    return f"{int(h.batches['batch_id'].min())}-{int(h.batches['batch_id'].max())}"


def _session_facts(spark) -> dict:
    """The settings of this session the verdicts use (unset ones are left out)."""
    facts = {}
    for key in KEPT_PROPERTIES:
        try:
            value = spark.conf.get(key)
        except Exception:  # noqa: BLE001 - unset keys raise on Spark Connect
            value = None
        if value:
            facts[key] = value
    if str(facts.get(MASTER_CONF, "")).startswith("local"):
        facts["executors"] = 1
    elif facts.get(EXECUTOR_INSTANCES_CONF):
        facts["executors"] = int(facts[EXECUTOR_INSTANCES_CONF])
    return facts


def start_monitor(checkpoint_path: str = "", spark_master: str = "", summary_path: str = "",
                  fail_on: str = "never", event_log_path: str = "", app_id: str = "",
                  query_name: str = "", query_id: str = "", watch_seconds: float = 60,
                  demo: dict | None = None) -> MonitorRun:
    """Validate the parameters, read the chosen source and build the query's history. With no
    source at all (no checkpoint, event log or query), the demo; a scheduled or command-line run
    refuses it before Spark starts."""
    def check_watch_seconds():
        if watch_seconds < 0:
            raise RunbookError(f"watch_seconds must be 0 or more, got {watch_seconds}")

    rb = start_runbook(RUNBOOK, checkpoint_path, spark_master, summary_path, fail_on,
                       require_state=False, placeholders={"event_log_path": event_log_path},
                       checks=check_watch_seconds,
                       sources={"event_log_path": event_log_path, "query_name": query_name,
                                "query_id": query_id})
    spark = rb.spark
    if rb.checkpoint is not None and not query_id:
        query_id = rb.checkpoint.query_id or ""
        if not (query_id or query_name or event_log_path):
            raise RunbookError(f"checkpoint {rb.checkpoint.root} has no metadata file, so the id "
                               "of its query is unknown: pass query_id, query_name or "
                               "event_log_path")
    demo_log, log, apps = None, None, []
    if event_log_path or not (query_name or query_id):
        if not event_log_path:  # no source at all: the demo (start_runbook checked it is wanted)
            demo_log = write_demo_event_log(**(demo or {}))
            event_log_path = demo_log.event_log_dir
        log, query_id, apps = event_log.load(spark, event_log_path, app_id, query_name, query_id)
        facts = {**log.properties, "executors": log.executors}
        source = {"kind": "demo" if demo_log else "event_log", "path": event_log_path,
                  "app_id": log.app_id}
        history = build_history(log.progress, f"event log of {log.app_id}", facts)
    else:
        progress = listener.watch(spark, query_name, query_id, watch_seconds)
        if not progress:
            raise RunbookError(f"query {query_name or query_id} reported no batch in "
                               f"{watch_seconds} s: it may be idle; watch longer")
        source = {"kind": "live", "watch_seconds": watch_seconds,
                  "connect": is_connect(spark)}
        history = build_history(progress, "this session", _session_facts(spark))
    return MonitorRun(rb.name, spark, rb.summary, summary_path, fail_on, history=history,
                      source=source, demo=demo_log, log=log, applications=apps)


def state_table(history: History) -> pd.DataFrame:
    """Per batch and operator: input rows and the state's row counts (no timings: they vary)."""
    columns = ["batch_id", "operator_index", "operator_name", "num_rows_total", "num_rows_updated",
               "num_rows_removed", "num_rows_dropped_by_watermark"]
    table = history.operators[columns].merge(history.batches[["batch_id", "num_input_rows"]],
                                             on="batch_id")
    return table[["batch_id", "num_input_rows", *columns[1:]]].sort_values(
        ["batch_id", "operator_index"])


def summarize(run: MonitorRun, verdicts: list[Verdict]) -> None:
    """Verdicts become findings; the history's figures go into the summary's details."""
    for verdict in verdicts:
        run.summary.add_finding(verdict.severity, verdict.code, verdict.message)
    h = run.history
    run.summary.details.update({
        "source": run.source,
        "query_id": h.query_id, "query_name": h.query_name,
        "batches_seen": h.batches_seen,
        "batch_ids": h.batches["batch_id"].astype(int).tolist(),
        "num_input_rows": h.batches["num_input_rows"].astype(int).tolist(),
        "batch_duration_ms": h.batches["batch_duration_ms"].astype(int).tolist(),
        "operators": operators_summary(h),
    })


def plot(history: History, title: str = ""):
    """The state-over-time figure of a history (``plots.state_history``)."""
    from state_runbooks.running import plots
    ops = history.operators
    share = ops.assign(share=ops["commit_time_ms"] / ops["num_state_store_instances"].clip(lower=1)
                       / ops["batch_id"].map(history.batches.set_index("batch_id")
                                             ["batch_duration_ms"]).clip(lower=1))
    shares = History(history.query_id, history.query_name, history.batches, share).series("share")
    return plots.state_history(history.series("num_rows_total"),
                               history.series("memory_used_bytes"), shares,
                               history.series("num_rows_dropped_by_watermark"),
                               title or f"State of query {history.query_name or history.query_id}")
