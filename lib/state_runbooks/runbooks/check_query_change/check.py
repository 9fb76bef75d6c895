"""The whole check: compare old and new, run Spark's own check, rehearse on a copy, decide
(:mod:`.verdict`: one rule, so that the verdict and every row agree)."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.core.state_layout import state_layout
from state_runbooks.query.job import JobQuery, session_value
from state_runbooks.query.planning import Probe, probe, restart_settings
from state_runbooks.session.spark_session import is_connect

from . import compare as cmp
from .pinned_settings import pinned_settings
from .plan_text import explain_text, plan_facts
from state_runbooks.query.rehearsal import Rehearsal, rehearse
from state_runbooks.query.source_changes import compare_sources
from state_runbooks.query.sources import checkpoint_sources, query_sources
from .verdict import RestartVerdict, decide


@dataclass
class Check:
    job: JobQuery
    comparison: cmp.Comparison
    probe: Probe
    rehearsal: Rehearsal | None
    settings: list
    verdict: RestartVerdict
    rehearse_asked: bool = True

    @property
    def restart(self) -> str:
        return self.verdict.restart

    @property
    def status(self) -> str:
        return self.verdict.status

    @property
    def error_class(self) -> str | None:
        return self.verdict.error_class

    @property
    def rehearsed(self) -> bool:
        """The rehearsal gave Spark's answer (the batch ran, or Spark failed it)."""
        return bool(self.rehearsal is not None and self.rehearsal.restart is not None)

    @property
    def prediction(self) -> tuple[str | None, str | None]:
        """What the rows other than the rehearsal say: (restarts or fails, error class)."""
        failing = [r for r in self.comparison.failing() if not r.aspect.startswith("rehearsal")]
        return ("fails", failing[0].error_class) if failing else ("restarts", None)

    @property
    def disagreement(self) -> str | None:
        """How the rehearsal differs from the prediction (None when they agree)."""
        if not self.rehearsed:
            return None
        predicted, seen = self.prediction, (self.rehearsal.restart, self.rehearsal.error_class)
        if predicted[0] == seen[0] and (predicted[1] in (None, seen[1]) or seen[1] is None):
            return None
        return (f"predicted {predicted[0]}" + (f" ({predicted[1]})" if predicted[1] else "")
                + f", Spark {seen[0]}" + (f" ({seen[1]})" if seen[1] else ""))

    @property
    def ignored_settings(self) -> list[str]:
        return [s.key for s in self.settings if s.ignored]


def compare_query(spark, ckpt, job: JobQuery) -> tuple[cmp.Comparison, Probe, list]:
    """Every aspect old against new, and Spark's own check (not yet applied to the rows)."""
    batch, metadata_json, query_id = restart_settings(ckpt)
    newest = ckpt.offsets(batch)
    facts = plan_facts(explain_text(job.df))
    spark_check = probe(spark, ckpt, job, batch, metadata_json, query_id)
    old = state_layout(spark, ckpt.fs)
    known = spark_check.new_operators if spark_check.new_known else None
    new_names = [o.operator_name for o in known] if known is not None else facts.operators
    session = {k: session_value(spark, k) for k in ckpt.pinned_conf}
    settings = pinned_settings(ckpt.pinned_conf, job.job_conf, session)
    last = ckpt.last_committed_batch_id
    watermark = ckpt.watermark(last)[0] if last is not None else newest.watermark_ms
    # A restart runs the batch after the last committed one (the newest, if it has no commit).
    restart_batch = newest.batch_id if last != newest.batch_id else newest.batch_id + 1
    source_verdicts = compare_sources(checkpoint_sources(ckpt, newest.batch_id),
                                      query_sources(job.df), newest.source_names is not None,
                                      spark)
    rows = (cmp.compare_operators(old, new_names, known, restart_batch)
            + cmp.compare_sources(source_verdicts)
            + [cmp.compare_output_mode(job.output_mode),
               cmp.compare_watermarks(watermark, facts.watermarks)]
            + cmp.compare_settings(settings))
    return cmp.Comparison(rows), spark_check, settings


def check_query_change(spark, ckpt, job: JobQuery, rehearse_change: bool = True,
                       scratch_dir: str = "") -> Check:
    """Compare the changed query with the checkpoint, run Spark's check, rehearse, decide."""
    comparison, spark_check, settings = compare_query(spark, ckpt, job)
    check = Check(job, comparison, spark_check, None, settings,
                  decide(comparison, spark_check, None, False), False)
    return add_rehearsal(check, spark, ckpt, scratch_dir) if rehearse_change else check


def add_rehearsal(check: Check, spark, ckpt, scratch_dir: str = "") -> Check:
    """Restart the changed query for one batch on a scratch copy (:mod:`state_runbooks.query.rehearsal`); then
    decide again."""
    check.rehearsal = rehearse(spark, ckpt, check.job, scratch_dir)
    check.rehearse_asked = True
    check.verdict = decide(check.comparison, check.probe, check.rehearsal, True)
    return check


def halves(check: Check, spark) -> str:
    """Which checks ran, in one line."""
    prediction = ("Spark's own check" if check.probe.available else
                  f"the files and the plan ({check.probe.reason})")
    if check.rehearsal is None:
        rehearsal = "not asked (rehearse=False)"
    elif check.rehearsed:
        rehearsal = f"ran batch {check.rehearsal.batch_id} on a copy"
    else:
        rehearsal = check.rehearsal.note or "no answer"
    kind = "Spark Connect" if is_connect(spark) else "classic"
    return f"prediction: {prediction}; rehearsal: {rehearsal} ({kind} session)"
