"""Old against new, side by side: one row per aspect a restart depends on, each graded with the
rule Spark applies to it.

The old side is the checkpoint: its operator metadata and schema files, the sources of its
newest offsets entry, its watermark and its pinned settings. The new side is the changed query:
the operators and schemas Spark's planning writes for it (:mod:`.spark_check`), else what its
explain says, its sources and watermarks, and the settings the job's code makes.

A row's grade is what a restart does with that aspect: ``same``; ``accepted`` (it restarts as
the change intends); ``changes`` (it restarts, but not as the change intends); ``ignored`` (Spark
replaces the job's value with the pinned one); ``fails`` (the restart raises); ``unknown`` (not
decidable from here). The grades here mirror Spark's rules; :mod:`.verdict` then sets the rows
that Spark's own check and the rehearsal decide, and draws the verdict from all of them.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from state_runbooks.core import state_schemas as schemas
from state_runbooks.core.state_layout import OperatorState

from .pinned_settings import PinnedSetting, short
from state_runbooks.query.source_changes import SourceVerdict

OPERATOR_NOT_MATCH = "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"
SOURCES = "sources"  # a source's row carries the sentence Spark fails with, not an error class
SHOWN_WHOLE = 43  # characters of a schema a row shows whole; a longer one from its first change
GRADES = ("same", "accepted", "changes", "ignored", "fails", "unknown")
SEVERITY = {"fails": "critical", "ignored": "warning", "changes": "warning",
            "unknown": "warning", "accepted": "info", "same": "info"}

NEW_CHECKPOINT = ("or start a new checkpoint from the logged offsets and let the state build up "
                  "again")
ACTIONS = {
    schemas.KEY_NOT_COMPATIBLE: "keep the old key (the same grouping, deduplication or join "
                                f"columns with the same types), {NEW_CHECKPOINT}",
    schemas.VALUE_NOT_COMPATIBLE: "keep the old state value (the same aggregates or state "
                                  f"fields), {NEW_CHECKPOINT}",
    OPERATOR_NOT_MATCH: "keep the stateful operators and their order (add new stateful steps "
                        f"in a new query), {NEW_CHECKPOINT}",
    SOURCES: "keep the sources as they were (the same kind, what they read, their order); or "
             "move the checkpoint onto the new source with its state (12 Move a checkpoint, "
             f"runbooks/move-checkpoint.md); {NEW_CHECKPOINT}",
}
RULES = {
    schemas.KEY_NOT_COMPATIBLE: "Spark's StateSchemaCompatibilityChecker: same fields, order "
                                "and types (names aside; a field may become non-nullable)",
    schemas.VALUE_NOT_COMPATIBLE: "Spark's StateSchemaCompatibilityChecker, on the value",
    OPERATOR_NOT_MATCH: "IncrementalExecution checks operator i of the new plan against the "
                        "operator metadata of id i, on a restart at a batch after 0",
}


@dataclass
class Difference:
    aspect: str
    old: str
    new: str
    verdict: str  # one of GRADES
    rule: str = ""
    error_class: str | None = None
    action: str = ""
    message: str = ""  # Spark's own words where it fails (its message, or the assertion's)

    @property
    def severity(self) -> str:
        return SEVERITY.get(self.verdict, "info")


@dataclass
class Comparison:
    rows: list[Difference] = field(default_factory=list)

    def differences(self) -> list[Difference]:
        return [r for r in self.rows if r.verdict != "same"]

    def failing(self) -> list[Difference]:
        return [r for r in self.rows if r.verdict == "fails"]


def _ops_line(names: list[str]) -> str:
    return ", ".join(f"{i} {n}" for i, n in enumerate(names)) or "none"


def compare_operators(old: list[OperatorState], new_names: list[str],
                      new: list[OperatorState] | None, restart_batch: int) -> list[Difference]:
    """The stateful operators (Spark's metadata check, mirrored), then each store's schemas
    (``new`` None: the changed query's schemas are not known here)."""
    old_names = [o.operator_name for o in old]
    aspect = "stateful operators"
    if old_names == new_names:
        rows = [Difference(aspect, _ops_line(old_names), _ops_line(new_names), "same")]
    elif "unknown" in old_names:
        rows = [Difference(aspect, _ops_line(old_names), _ops_line(new_names), "unknown",
                           "without operator metadata Spark skips its operator check; the "
                           "state of operator i is read by whichever operator the new plan "
                           "numbers i")]
    elif restart_batch == 0:
        rows = [Difference(aspect, _ops_line(old_names), _ops_line(new_names), "accepted",
                           RULES[OPERATOR_NOT_MATCH],
                           action="the restart runs batch 0 again: Spark does not check the "
                                  "operators, and the new ones start with empty state")]
    else:
        rows = [Difference(aspect, _ops_line(old_names), _ops_line(new_names), "fails",
                           RULES[OPERATOR_NOT_MATCH], OPERATOR_NOT_MATCH,
                           ACTIONS[OPERATOR_NOT_MATCH])]
    by_id = {o.operator_id: o for o in new or []}
    for op in old:
        other = by_id.get(op.operator_id)
        if other is not None and other.operator_name != op.operator_name:
            continue  # another operator at this id: the operators' row says it
        if new is not None and other is None:
            continue
        for store in op.stores:
            for family in store.families or [None]:
                rows += _compare_family(op, store.store_name, family, other)
    return rows


def _compare_family(op, store_name, family, other) -> list[Difference]:
    label = f"{op.operator_id} {op.operator_name}"
    if family is None:
        return [Difference(f"{label} {store_name}: schema", "no schema file readable from here",
                           "-", "unknown", "Spark checks the schema it wrote; it is not "
                           "readable from here")]
    # A store's column families (transformWithState's variables, a join's four stores in state
    # format 3) are named by the family alone; a plain store by its name.
    label += f" {family.name if family.name != 'default' else store_name}"
    if other is None:
        return [Difference(f"{label}: {part}", schemas.show(stored), "not known here",
                           "unknown", "the changed query's state schema comes from Spark's "
                           "planning, which only a classic session can call")
                for part, stored in (("key", family.key), ("value", family.value))]
    mine = other.family(store_name, family.name)
    if mine is None:
        return [Difference(f"{label}: schema", schemas.show(family.key), "not in the new query",
                           "accepted", "Spark checks the column families the new query has",
                           action="the state variable is no longer used; its state stays in "
                                  "the checkpoint")]
    rows = []
    for part, stored, new, error in (("key", family.key, mine.key, schemas.KEY_NOT_COMPATIBLE),
                                     ("value", family.value, mine.value,
                                      schemas.VALUE_NOT_COMPATIBLE)):
        change = schemas.difference(new, stored)
        if change == "same":
            rows.append(Difference(f"{label}: {part}", schemas.show(stored), schemas.show(new),
                                   "same"))
            continue
        old_text, new_text = schemas.show(stored), schemas.show(new)
        if max(len(old_text), len(new_text)) > SHOWN_WHOLE:  # the part that changed
            old_text, new_text = schemas.changed_fields(new, stored)
        if schemas.compatible(new, stored):
            verdict, action, cls = "accepted", f"accepted: {change}", None
        else:
            verdict, action, cls = "fails", f"{change}: {ACTIONS[error]}", error
        rows.append(Difference(f"{label}: {part}", old_text, new_text, verdict, RULES[error],
                               cls, action))
    return rows


def compare_sources(verdicts: list[SourceVerdict]) -> list[Difference]:
    """One row per source (:mod:`state_runbooks.query.source_changes` decides each)."""
    rows = []
    for v in verdicts:
        aspect = v.label if v.label == "sources" else f"source {v.label}".replace(
            "source source", "source")
        action = {"fails": ACTIONS[SOURCES], "changes": v.why, "unknown": v.why}.get(v.verdict, "")
        rows.append(Difference(aspect, v.old, v.new, v.verdict, v.why, None, action, v.error))
    return rows


def compare_watermarks(watermark_ms: int, new: list[tuple[str, str]]) -> Difference:
    when = (dt.datetime.fromtimestamp(watermark_ms / 1000, dt.timezone.utc)
            .strftime("%Y-%m-%d %H:%M:%S UTC") if watermark_ms else "none yet")
    old = f"at {when} (columns and delays are not recorded)"
    shown = ", ".join(f"{c} {d}" for c, d in new) or "none"
    if watermark_ms and not new:
        return Difference("watermarks", old, shown, "changes",
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
