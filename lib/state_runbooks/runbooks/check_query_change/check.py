"""The whole check: compare, predict with Spark's own check, rehearse on a copy, decide.

Where the prediction and the rehearsal differ, the rehearsal wins (it is what Spark did) and the
difference is kept in ``Check.disagreement``. Where the rehearsal could not run or could not
decide (no copy over Spark Connect outside Databricks, a source unreachable from here), the
prediction stands and the check says which half ran.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.session.spark_session import is_connect

from . import compare as cmp
from .layout import state_layout
from .load_job import JobQuery, session_value
from .pinned_settings import pinned_settings
from .plan_text import explain_text, plan_facts
from .rehearsal import Rehearsal, rehearse
from .spark_check import Probe, probe


@dataclass
class Check:
    job: JobQuery
    comparison: cmp.Comparison
    probe: Probe
    rehearsal: Rehearsal | None
    settings: list

    @property
    def restart(self) -> str:
        if self.rehearsal is not None and self.rehearsal.conclusive:
            return self.rehearsal.restart
        return self.comparison.predicted_restart

    @property
    def error_class(self) -> str | None:
        if self.rehearsal is not None and self.rehearsal.conclusive:
            return self.rehearsal.error_class
        return self.comparison.predicted_error_class

    @property
    def rehearsed(self) -> bool:
        return bool(self.rehearsal is not None and self.rehearsal.conclusive)

    @property
    def disagreement(self) -> str | None:
        """How the rehearsal differs from the prediction (None when they agree)."""
        if not self.rehearsed:
            return None
        predicted = (self.comparison.predicted_restart, self.comparison.predicted_error_class)
        seen = (self.rehearsal.restart, self.rehearsal.error_class)
        if predicted == seen:
            return None
        return (f"predicted {predicted[0]}" + (f" ({predicted[1]})" if predicted[1] else "")
                + f", Spark {seen[0]}" + (f" ({seen[1]})" if seen[1] else "")
                + ": the rehearsal wins")

    @property
    def ignored_settings(self) -> list[str]:
        return [s.key for s in self.settings if s.ignored]

    @property
    def status(self) -> str:
        if self.restart == "fails":
            return "critical"
        rows = self.comparison.differences()
        if self.ignored_settings or any(r.verdict == "semantics" for r in rows):
            return "warning"
        return "ok"


def check_query_change(spark, ckpt, job: JobQuery, rehearse_change: bool = True,
                       scratch_dir: str = "") -> Check:
    """Compare the changed query with the checkpoint, predict, rehearse, decide."""
    newest = ckpt.offsets(ckpt.offset_batch_ids[-1])
    metadata_json = ckpt.fs.read_text(f"offsets/{newest.batch_id}").splitlines()[1]
    facts = plan_facts(explain_text(job.df))
    spark_check = probe(spark, ckpt, job, newest.batch_id, metadata_json, ckpt.query_id or
                        "00000000-0000-0000-0000-000000000000")
    old = state_layout(spark, ckpt.fs)
    new_names = ([o.operator_name for o in spark_check.new_operators] if spark_check.available
                 and spark_check.new_operators else facts.operators)
    session = {k: session_value(spark, k) for k in ckpt.pinned_conf}
    settings = pinned_settings(ckpt.pinned_conf, job.job_conf, session)
    last = ckpt.last_committed_batch_id
    watermark = ckpt.watermark(last)[0] if last is not None else newest.watermark_ms
    rows = (cmp.compare_operators(old, new_names, spark_check.new_operators or None)
            + [cmp.compare_sources(len(newest.sources), facts.sources),
               cmp.compare_output_mode(job.output_mode),
               cmp.compare_watermarks(watermark, facts.watermarks)]
            + cmp.compare_settings(settings))
    comparison = cmp.predict(cmp.Comparison(rows), spark_check)
    check = Check(job, comparison, spark_check, None, settings)
    return add_rehearsal(check, spark, ckpt, scratch_dir) if rehearse_change else check


def add_rehearsal(check: Check, spark, ckpt, scratch_dir: str = "") -> Check:
    """Restart the changed query for one batch on a scratch copy (:mod:`.rehearsal`)."""
    check.rehearsal = rehearse(spark, ckpt, check.job, scratch_dir)
    return check


def halves(check: Check, spark) -> str:
    """Which halves ran, in one line."""
    prediction = ("Spark's own check" if check.probe.available else
                  f"the files and the plan ({check.probe.reason})")
    if check.rehearsal is None:
        rehearsal = "not asked (rehearse=False)"
    elif check.rehearsal.conclusive:
        rehearsal = f"ran batch {check.rehearsal.batch_id} on a copy"
    else:
        rehearsal = check.rehearsal.note or "inconclusive"
    kind = "Spark Connect" if is_connect(spark) else "classic"
    return f"prediction: {prediction}; rehearsal: {rehearsal} ({kind} session)"
