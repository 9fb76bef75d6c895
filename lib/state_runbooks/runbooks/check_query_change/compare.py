"""Old against new, side by side, and a verdict per difference with Spark's rule behind it.

The old side is the checkpoint: its operator metadata and schema files, the sources of its
newest offsets entry, its watermark and its pinned settings. The new side is the changed query:
the operators and schemas Spark's planning writes for it (:mod:`.spark_check`), else what its
explain says, its sources and watermarks, and the settings the job's code makes.

A difference is ``fails`` (a restart raises Spark's error class), ``ignored`` (Spark replaces
the job's value with the pinned one), ``semantics`` (it restarts, but not as the change
intends), ``accepted`` or ``unknown`` (not decidable from here). Where Spark's own check ran,
its error class is the prediction; the comparisons here explain it and cover what it does not
check (the number of sources is checked earlier, when a restart reads the offsets log).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from . import schemas
from .layout import OperatorState
from .pinned_settings import PinnedSetting, short

SOURCES_CHANGED = "STREAM_FAILED"  # an assertion inside STREAM_FAILED: Spark gives it no class
OPERATOR_NOT_MATCH = "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"
SEVERITY = {"fails": "critical", "ignored": "warning", "semantics": "warning",
            "accepted": "info", "unknown": "info"}

ACTIONS = {
    schemas.KEY_NOT_COMPATIBLE: "keep the old key (the same grouping, deduplication or join "
                                "columns with the same types), or start a new checkpoint from "
                                "the logged offsets and let the state build up again",
    schemas.VALUE_NOT_COMPATIBLE: "keep the old state value (the same aggregates or state "
                                  "fields), or start a new checkpoint from the logged offsets",
    OPERATOR_NOT_MATCH: "keep the stateful operators and their order (add new stateful steps "
                        "in a new query), or start a new checkpoint from the logged offsets",
    SOURCES_CHANGED: "keep the same sources in the same order, or start a new checkpoint from "
                     "the logged offsets",
}
RULES = {
    schemas.KEY_NOT_COMPATIBLE: "Spark's StateSchemaCompatibilityChecker: same fields, order "
                                "and types (names aside; a field may become non-nullable)",
    schemas.VALUE_NOT_COMPATIBLE: "Spark's StateSchemaCompatibilityChecker, on the value",
    OPERATOR_NOT_MATCH: "the operator metadata: operator i must be the same operator",
    SOURCES_CHANGED: "the offsets log holds one offset per source, in order: the counts must "
                     "match",
}


@dataclass
class Difference:
    aspect: str
    old: str
    new: str
    verdict: str  # same, accepted, fails, ignored, semantics, unknown
    rule: str = ""
    error_class: str | None = None
    action: str = ""

    @property
    def severity(self) -> str:
        return SEVERITY.get(self.verdict, "info")


@dataclass
class Comparison:
    rows: list[Difference] = field(default_factory=list)
    predicted_error_class: str | None = None
    predicted_message: str = ""
    by_spark_check: bool = False  # the prediction comes from Spark's own check

    @property
    def predicted_restart(self) -> str:
        return "fails" if self.predicted_error_class else "restarts"

    def differences(self) -> list[Difference]:
        return [r for r in self.rows if r.verdict != "same"]


def _ops_line(names: list[str]) -> str:
    return ", ".join(f"{i} {n}" for i, n in enumerate(names)) or "none"


def compare_operators(old: list[OperatorState], new_names: list[str],
                      new: list[OperatorState] | None) -> list[Difference]:
    old_names = [o.operator_name for o in old]
    rows = []
    if old_names == new_names:
        rows.append(Difference("stateful operators", _ops_line(old_names), _ops_line(new_names),
                               "same"))
    elif new_names[:len(old_names)] == old_names or old_names[:len(new_names)] != new_names:
        # Spark checks each operator of the new plan against the metadata of the same id.
        rows.append(Difference("stateful operators", _ops_line(old_names),
                               _ops_line(new_names), "fails", RULES[OPERATOR_NOT_MATCH],
                               OPERATOR_NOT_MATCH, ACTIONS[OPERATOR_NOT_MATCH]))
    else:
        rows.append(Difference(
            "stateful operators", _ops_line(old_names), _ops_line(new_names), "semantics",
            "Spark checks the operators the new plan has; a state left behind is not checked",
            action="operators " + ", ".join(f"{o.operator_id} ({o.operator_name})"
                                            for o in old[len(new_names):])
            + " keep their state in the checkpoint but no longer run: if that is the intent, "
              "a new checkpoint from the logged offsets leaves nothing behind"))
    if new is None:
        return rows
    by_id = {o.operator_id: o for o in new}
    for op in old:
        other = by_id.get(op.operator_id)
        if other is None or other.operator_name != op.operator_name:
            continue
        for store in op.stores:
            for family in store.families or [None]:
                rows += _compare_family(op, store.store_name, family, other)
    return rows


def _compare_family(op, store_name, family, other) -> list[Difference]:
    label = f"{op.operator_id} {op.operator_name} {store_name}"
    if family is None:
        return [Difference(f"{label}: schema", "no schema file readable from here", "-",
                           "unknown")]
    if family.name != "default":
        label += f" {family.name}"
    mine = other.family(store_name, family.name)
    if mine is None:
        return [Difference(f"{label}: schema", schemas.show(family.key), "not in the new query",
                           "unknown", "Spark checks the column families the new query has")]
    rows = []
    for part, stored, new, error in (("key", family.key, mine.key, schemas.KEY_NOT_COMPATIBLE),
                                     ("value", family.value, mine.value,
                                      schemas.VALUE_NOT_COMPATIBLE)):
        change = schemas.difference(new, stored)
        if change == "same":
            verdict, rule, action, cls = "same", "", "", None
        elif schemas.compatible(new, stored):
            verdict, rule, action, cls = "accepted", RULES[error], f"accepted: {change}", None
        else:
            verdict, rule, action, cls = "fails", RULES[error], ACTIONS[error], error
        rows.append(Difference(f"{label}: {part}", schemas.show(stored), schemas.show(new),
                               verdict, rule, cls, action or change))
    return rows


def compare_sources(old_count: int, new_sources: list[str]) -> Difference:
    new = f"{len(new_sources)}: {', '.join(new_sources)}" if new_sources else "0"
    if old_count == len(new_sources):
        return Difference("sources", str(old_count), new, "same")
    return Difference("sources", str(old_count), new, "fails", RULES[SOURCES_CHANGED],
                      SOURCES_CHANGED, ACTIONS[SOURCES_CHANGED])


def compare_watermarks(watermark_ms: int, new: list[tuple[str, str]]) -> Difference:
    when = (dt.datetime.fromtimestamp(watermark_ms / 1000, dt.timezone.utc)
            .strftime("%Y-%m-%d %H:%M:%S UTC") if watermark_ms else "none yet")
    old = f"at {when} (columns and delays are not recorded)"
    shown = ", ".join(f"{c} {d}" for c, d in new) or "none"
    if watermark_ms and not new:
        return Difference("watermarks", old, shown, "semantics",
                          "without a watermark the state is never evicted",
                          action="keep a watermark, or the state grows without bound")
    return Difference("watermarks", old, shown, "accepted",
                      "Spark keeps the watermark reached and applies the query's delays from "
                      "the next batch", action="a longer delay keeps state longer; a shorter "
                      "one drops more late rows")


def compare_output_mode(mode: str) -> Difference:
    return Difference("output mode", "not recorded in the checkpoint", mode, "accepted",
                      "the output mode is not part of the state; Spark does not check it",
                      action="if it changed, the sink receives rows differently (append: once, "
                             "final; update: each change)")


def compare_settings(settings: list[PinnedSetting]) -> list[Difference]:
    rows = []
    for s in settings:
        if s.ignored:
            rows.append(Difference(
                f"setting {s.key}", short(s.key, s.pinned), short(s.key, s.job_value), "ignored",
                "OffsetSeqMetadata.setSessionConf: a restart sets the pinned value"
                + (" (Spark's default for checkpoints without it)" if s.from_default else ""),
                action=s.action()))
        elif s.session_differs:
            rows.append(Difference(
                f"setting {s.key}", short(s.key, s.pinned), f"{short(s.key, s.session_value)} "
                "in this session, not set by the job's code", "accepted",
                "OffsetSeqMetadata.setSessionConf: a restart sets the pinned value",
                action=f"the pinned {short(s.key, s.pinned)} applies, whatever a cluster sets"))
        else:
            rows.append(Difference(f"setting {s.key}", short(s.key, s.pinned),
                                   short(s.key, s.job_value or s.session_value), "same"))
    return rows


def predict(comparison: Comparison, spark_check=None) -> Comparison:
    """The prediction: Spark's own check where it ran, the comparisons elsewhere. A change of
    sources fails first (a restart reads the offsets log before it plans)."""
    failing = [r for r in comparison.rows if r.verdict == "fails"]
    sources = next((r for r in failing if r.error_class == SOURCES_CHANGED), None)
    if sources is not None:
        comparison.predicted_error_class = SOURCES_CHANGED
        comparison.predicted_message = "the number of sources differs from the offsets log's"
    elif spark_check is not None and spark_check.available:
        comparison.by_spark_check = True
        comparison.predicted_error_class = spark_check.error_class
        comparison.predicted_message = spark_check.message
        for row in comparison.rows:  # Spark's check decides; the rows say where
            if row.verdict == "fails" and row.error_class != spark_check.error_class:
                row.verdict, row.error_class = "accepted", None
                row.action = f"Spark's own check accepts it ({row.action})"
    elif failing:
        comparison.predicted_error_class = failing[0].error_class
        comparison.predicted_message = f"{failing[0].aspect}: {failing[0].old} -> {failing[0].new}"
    return comparison
