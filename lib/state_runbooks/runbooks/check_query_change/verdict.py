"""The verdict, by one rule, and the rows it stands on.

A restart is judged on every aspect Spark checks when a query restarts: its stateful operators
and state schemas (Spark's own check, :mod:`.spark_check`), its sources (:mod:`state_runbooks.query.sources`), and,
where it ran, the rehearsal (:mod:`state_runbooks.query.rehearsal`), whose outcome is what Spark did. The rule:

- ``fails`` when any row fails: Spark's own check raised, the rehearsal failed (whatever the
  reason: it is Spark's answer), or a rule Spark applies before planning refuses (the number of
  sources, a source that cannot read its logged offset);
- else ``unknown`` when a check could not run here (``not_checked``) or a row cannot be decided;
- else ``restarts``.

Each row carries that same grade, so no row contradicts the verdict: where Spark's own check
ran, the operator and schema rows take its answer; the rehearsal has a row of its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .compare import OPERATOR_NOT_MATCH, Comparison, Difference

SCHEMA_ERROR_PREFIX = "STATE_STORE_"  # Spark's schema checks raise STATE_STORE_*SCHEMA* classes
STATUS = {"fails": "critical", "unknown": "warning"}


@dataclass
class RestartVerdict:
    """Whether the changed query restarts on the checkpoint (restarts, fails or unknown), by the
    one rule, with the checks that ran and those that could not."""
    restart: str  # restarts, fails or unknown
    status: str  # ok, warning or critical
    error_class: str | None = None  # the failing check's Spark error class
    message: str = ""  # its first line
    checked: list[str] = field(default_factory=list)  # each check that ran, and how
    not_checked: list[str] = field(default_factory=list)  # each that could not, and why


def _is_schema_row(row: Difference) -> bool:
    return row.aspect.endswith((": key", ": value", ": schema"))


def apply_spark_check(comparison: Comparison, probe) -> None:
    """Spark's own check decides the operator and schema rows: a row it does not fail is
    accepted, the row of the error it raised fails (a row of its own where no row names it)."""
    error = probe.error_class
    operator_rows = [r for r in comparison.rows if r.aspect == "stateful operators"]
    schema_rows = [r for r in comparison.rows if _is_schema_row(r)]
    for row in operator_rows + schema_rows:
        if row.verdict in ("fails", "unknown") and row.error_class != error:
            row.verdict, row.error_class = "accepted", None
            row.action = "Spark's own check accepts it" + (f" ({row.action})" if row.action
                                                           else "")
    if error is None:
        return
    named = [r for r in operator_rows + schema_rows if r.error_class == error]
    if error == OPERATOR_NOT_MATCH and not named:
        named = operator_rows
    for row in named:
        row.verdict, row.error_class, row.message = "fails", error, probe.message
    if not named:
        comparison.rows.append(Difference(
            "Spark's restart check", "the checkpoint's operators and schemas",
            "the changed query's plan", "fails", "Spark's own check, run by planning the "
            "changed query as a restart does", error, "see Spark's message", probe.message))


def rehearsal_row(rehearsal) -> Difference | None:
    """The rehearsal as a row: what Spark did with the changed query on a copy (None where it
    did not run)."""
    if rehearsal is None or not rehearsal.attempted:
        return None
    label = f"rehearsal (batch {rehearsal.batch_id} on a copy)"
    if rehearsal.ran:
        return Difference(label, "-", "the batch ran", "accepted",
                          "what Spark did when the changed query restarted on the copy")
    if rehearsal.ran is False:
        return Difference(label, "-", f"Spark failed it: {rehearsal.error_class}", "fails",
                          "what Spark did when the changed query restarted on the copy",
                          rehearsal.error_class, "the restart fails as the rehearsal did: "
                          "fix the cause it names, then check again", rehearsal.message)
    return Difference(label, "-", rehearsal.note, "unknown",
                      "the rehearsal did not finish: it says nothing of the restart")


def decide(comparison: Comparison, probe, rehearsal, rehearse_asked: bool) -> RestartVerdict:
    """Set the rows Spark's check and the rehearsal decide; then the one rule."""
    checked, not_checked = [], []
    if probe.available:
        apply_spark_check(comparison, probe)
        checked.append("operators and state schemas: Spark's own check, planning the changed "
                       "query as a restart does")
    else:
        not_checked.append(f"operators and state schemas: Spark's own check ({probe.reason}); "
                           "compared with Spark's rules on what the files and the plan show")
    sources = [r for r in comparison.rows if r.aspect.startswith("source")]
    undecided = [r.aspect for r in sources if r.verdict == "unknown"]
    (not_checked if undecided else checked).append(
        f"sources: {len(sources) - len(undecided)} of {len(sources)} compared by kind and what "
        "they read" + (f" ({', '.join(undecided)} not decidable from the files)"
                       if undecided else ""))
    row = rehearsal_row(rehearsal)
    if row is not None:
        comparison.rows.append(row)
        if row.verdict != "unknown":
            checked.append(f"rehearsal: batch {rehearsal.batch_id} run again on a copy")
            if row.verdict == "accepted":  # the sources took their logged offsets
                for source in sources:
                    if source.verdict == "unknown":
                        source.verdict = "accepted"
                        source.action = ("the rehearsal's restart read its logged offset; "
                                         "what it reads now is not recorded in the checkpoint")
                        not_checked = [n for n in not_checked if not n.startswith("sources:")]
    elif not rehearse_asked:
        not_checked.append("rehearsal: not asked (rehearse=False)")
    else:
        not_checked.append(f"rehearsal: {rehearsal.note}")
    failing = comparison.failing()
    if failing:
        first = _first_cause(failing)
        restart, error_class, message = "fails", first.error_class, first.message
    elif not_checked or any(r.verdict == "unknown" for r in comparison.rows):
        restart, error_class, message = "unknown", None, ""
    else:
        restart, error_class, message = "restarts", None, ""
    status = STATUS.get(restart) or ("warning" if any(
        r.verdict in ("changes", "ignored") for r in comparison.rows) else "ok")
    return RestartVerdict(restart, status, error_class, message, checked, not_checked)


def _first_cause(failing: list[Difference]) -> Difference:
    """The failure to name: what the rehearsal raised (what Spark did), else the sources' (a
    restart reads them before it plans), else Spark's check's."""
    def rank(row: Difference) -> int:
        if row.aspect.startswith("rehearsal"):
            return 0
        if row.aspect.startswith("source"):
            return 1
        return 2
    return sorted(failing, key=rank)[0]
