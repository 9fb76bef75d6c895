"""The runbook's steps: choose the source and build the history, then judge it.

Sources, one at a time: an event log (``event_log_path``), a query running in this session
(``query_name`` / ``query_id``, watched for ``watch_seconds``), or with neither the demo: a stateful
query run in a child process with the event log on (:mod:`.demo`), whose log is then read like any
other.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field

import pandas as pd

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import EXECUTOR_INSTANCES_CONF, MASTER_CONF
from state_runbooks.demos.event_logs import DemoLog
from state_runbooks.running.results import Finding
from state_runbooks.running.start import RunbookContext
from state_runbooks.session.spark_session import is_connect

from . import event_log, listener
from .demo import run_demo
from .event_log import KEPT_PROPERTIES
from .history import History, build_history
from .verdicts import Thresholds, judge

RUNBOOK = "monitor_state"


@dataclass
class MonitorRun:
    """The history read from the source, and where it came from."""
    spark_version: str
    history: History
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
                f"Spark {self.spark_version}")

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


def start_options(event_log_path: str = "", query_name: str = "", query_id: str = "",
                  watch_seconds: float = 60) -> dict:
    """What ``start_runbook`` takes for this runbook beside the common parameters: its sources
    (with none of them and no checkpoint, the demo, which a scheduled or command-line run refuses
    before Spark starts) and the check of ``watch_seconds``."""
    def check_watch_seconds():
        if watch_seconds < 0:
            raise RunbookError(f"watch_seconds must be 0 or more, got {watch_seconds}")

    return {"require_state": False, "placeholders": {"event_log_path": event_log_path},
            "checks": check_watch_seconds,
            "sources": {"event_log_path": event_log_path, "query_name": query_name,
                        "query_id": query_id}}


def read_history(rb: RunbookContext, event_log_path: str = "", app_id: str = "",
                 query_name: str = "", query_id: str = "", watch_seconds: float = 60
                 ) -> MonitorRun:
    """Read the chosen source and build the query's history (``rb``: what ``start_runbook``
    returned with :func:`start_options`); the checkpoint, if given, names the query by its id."""
    if rb.checkpoint is not None and not query_id:
        query_id = rb.checkpoint.query_id or ""
        if not (query_id or query_name or event_log_path):
            raise RunbookError(f"checkpoint {rb.checkpoint.root} has no metadata file, so the id "
                               "of its query is unknown: pass query_id, query_name or "
                               "event_log_path")
    return _read(rb, event_log_path, app_id, query_name, query_id, watch_seconds)


def _read(rb: RunbookContext, event_log_path: str, app_id: str, query_name: str, query_id: str,
          watch_seconds: float) -> MonitorRun:
    spark = rb.spark
    demo_log, log, apps = None, None, []
    if event_log_path or not (query_name or query_id):
        if not event_log_path:  # no source at all: the demo (start_runbook checked it is wanted)
            demo_log = run_demo(rb)
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
    return MonitorRun(spark.version, history=history, source=source, demo=demo_log, log=log,
                      applications=apps)


def refusal(rb: RunbookContext, event_log_path: str = "", query_name: str = "") -> str:
    """The one line a source that holds no such query gets (shown, not raised); with no
    ``event_log_path``, a new empty folder's (it holds no event log)."""
    try:
        if event_log_path:
            _read(rb, event_log_path, "", query_name, "", 0)
        else:
            with tempfile.TemporaryDirectory(prefix="state-runbooks-demo-") as empty:
                _read(rb, empty, "", query_name, "", 0)
    except RunbookError as error:
        return f"RunbookError: {error}"
    return "read: no refusal"


@dataclass
class Monitored:
    """The one result of the runbook's steps: the history read, the thresholds it was judged
    with and every finding on it (what the summary and ``what_this_showed`` read)."""
    run: MonitorRun
    thresholds: Thresholds
    findings: list[Finding]


def judge_run(run: MonitorRun, thresholds: Thresholds) -> Monitored:
    """Every finding on the run's history, with what it was judged on."""
    return Monitored(run, thresholds, judge(run.history, thresholds))


def state_table(history: History) -> pd.DataFrame:
    """Per batch and operator: input rows and the state's row counts (no timings: they vary)."""
    columns = ["batch_id", "operator_index", "operator_name", "num_rows_total", "num_rows_updated",
               "num_rows_removed", "num_rows_dropped_by_watermark"]
    table = history.operators[columns].merge(history.batches[["batch_id", "num_input_rows"]],
                                             on="batch_id")
    return table[["batch_id", "num_input_rows", *columns[1:]]].sort_values(
        ["batch_id", "operator_index"])


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
