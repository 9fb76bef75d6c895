"""What a diagnosis, a plan and an outcome look like to the person reading the runbook, and the
run summary's keys and findings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from state_runbooks.common.formatting import id_ranges, source_offsets_lines  # noqa: F401 - 05's API
from state_runbooks.core.state_diff import all_equal, diff_lines
from state_runbooks.safety.change import summarize_change

from .apply import ROLLBACK, Outcome
from .demo import DemoResult
from state_runbooks.safety.diagnosis.diagnose import Diagnosis
from .plan import Plan


@dataclass
class Recovery:
    """What the runbook's steps produced, on the demo or a real checkpoint: what the summary
    reads."""
    diagnosis: Diagnosis
    plan: Plan
    outcome: Outcome | None = None  # of the rollback or undo asked for; None: diagnose only


# -- presenting a diagnosis ------------------------------------------------------------------------
def structure_lines(diag: Diagnosis) -> list[str]:
    last = diag.last_committed_batch_id
    flight = (f"batch {', '.join(map(str, diag.in_flight))} in flight (offsets, no commit)"
              if diag.in_flight else "no batch in flight")
    # Changelog checkpointing is a session setting, not pinned: the newest version's files say it.
    provider = {"hdfs": "HDFS-backed: <v>.delta per batch, <v>.snapshot now and then",
                "rocksdb": "RocksDB: <v>.zip per batch, listing the SST files it needs",
                "rocksdb_changelog": "RocksDB; its newest state version shows changelog "
                                     "checkpointing on (a session setting, not pinned): "
                                     "<v>.changelog per batch, <v>.zip snapshots now and then"
                }.get(diag.provider, diag.provider)
    lines = [f"offsets {id_ranges(diag.offset_batch_ids)}, "
             f"commits {id_ranges(diag.commit_batch_ids)}: "
             f"last committed batch {last}; {flight}",
             f"provider pinned in the offsets log: {provider}"]
    for op in diag.operators:
        versions = op["versions"]
        span = f"state versions {versions[0]}..{versions[1]}" if versions else "no state files"
        holding = op.get("partitions_with_state", range(op["partitions"]))
        parts = (f" x {op['partitions']} partitions" if len(holding) == op["partitions"] else
                 f", state in partition(s) {id_ranges(list(holding))} of {op['partitions']} (the "
                 "others hold none, by design)")
        lines.append(f"operator {op['operator_id']} ({op['operator_name']}): "
                     f"{len(op['stores'])} store(s){parts}, {span}")
    by_spark = (f" ({diag.content_checked_by_spark} of them by Spark's own load, which reads them "
                "through the checksum layer)" if diag.content_checked_by_spark else "")
    sidecars = (f"; {diag.sidecars_checked} have a .crc sidecar: every one's length compared with "
                f"it, and the bytes of the {diag.content_checked} that the batches examined here "
                f"need{by_spark}" if diag.sidecars_checked else "")
    lines.append(f"{diag.files_checked} files{sidecars}")
    return lines


def problem_lines(diag: Diagnosis) -> list[str]:
    if not diag.problems:
        return ["nothing missing, empty or damaged"]
    lines = []
    for p in diag.problems:
        batch = f" [batch {p.first_batch_id}]" if p.first_batch_id is not None else ""
        spark = f" ({p.error_class})" if p.error_class else ""
        lines.append(f"{p.path}{batch}: {p.problem}{spark}")
    return lines


def load_lines(diag: Diagnosis) -> list[str]:
    if not diag.load_test:
        return ["nothing to load: no committed batch with state"]
    lines = []
    for r in diag.load_test:
        where = f"batch {r.batch_id}, operator {r.operator_id} {r.store_name}"
        if r.ok:
            lines.append(f"{where}: loads ({r.rows} rows)")
        elif r.damaged:
            lines.append(f"{where}: FAILS in Spark's store code with {r.error_class}; file at "
                         f"fault: {r.path}")
        else:
            lines.append(f"{where}: Spark's reader cannot read it ({r.error_class or 'error'}: "
                         f"{r.message[:160]}); a reader limit, not evidence of damage")
    missing = [p for p in diag.problems if p.problem.startswith("partition directory missing")]
    for p in missing:
        lines.append(f"{p.path} is missing: Spark's reader skips a missing partition folder (its "
                     "rows are simply absent), while a restarted query fails on it")
    return lines


def bisection_lines(diag: Diagnosis) -> list[str]:
    if diag.retained is None:
        return ["no retained batch: nothing to search"]
    lo, hi = diag.retained
    lines = [f"retained: batches {lo}..{hi}; Spark keeps the last "
             f"minBatchesToRetain={diag.min_batches_to_retain} versions, so a rollback cannot go "
             f"further back than batch {lo}"]
    for p in diag.probes:
        verdict = "loads" if p.ok else "does not load"
        by = "Spark job" if p.by == "load" else "files"
        detail = f": {p.detail}" if p.detail and not p.ok else ""
        lines.append(f"  batch {p.batch_id}: {verdict} ({by}{detail})")
    g = diag.last_good_batch_id
    loads = f"{diag.loads} state load{'s' if diag.loads != 1 else ''}"
    lines.append(f"last good batch: {g if g is not None else 'none'} ({loads}; "
                 f"loading every retained batch would take {hi - lo + 1})")
    if diag.locating_reads:
        lines.append(f"naming the file at fault took {diag.locating_reads} more Spark read(s) "
                     "(the store at the first bad batch, the change feed of single versions)")
    return lines


def options_lines(diag: Diagnosis) -> list[str]:
    """The ways back to a running query, with their consequences; the recommended one first."""
    c, g = diag.last_committed_batch_id, diag.last_good_batch_id
    if c is None:
        return ["(c) nothing to recover: no batch was committed yet"]
    lines = []
    broken_state = g != c
    stops_restart = [p.path for p in diag.problems if p.critical]
    if not broken_state and stops_restart:
        lines.append(f"(c) the state loads, but a restart fails on {stops_restart[0]} (above): "
                     "make the repair below first, then restart the query")
    elif not broken_state:
        others = [p for p in diag.problems if not p.problem.startswith("offsets entry without")]
        lines.append(("(c) the committed state loads and none of the problems listed stops a "
                      "restart" if others else "(c) the committed state loads" if diag.problems
                      else "(c) nothing is broken")
                     + ": restart the query as it is"
                     + (f" (Spark re-runs batch {diag.in_flight[0]}, which was in flight)"
                        if diag.in_flight else ""))
    if broken_state and (g is not None or diag.can_replay_from_start):
        if g is None:
            lines.append("(a) roll back to before batch 0: the query re-runs every batch from the "
                         "offsets its sources start from (their sources/ entries are kept). Safe "
                         "only when the sources still hold all input since the query started.")
        else:
            with_input = [b for b in range(g + 1, c + 1) if b not in diag.no_input_batches]
            if with_input:
                lines.append(f"(a) roll back to batch {g}: the query re-reads the input of "
                             f"{_batches(with_input)} from its sources, starting after these "
                             f"offsets (offsets/{g}):")
            else:
                lines.append(f"(a) roll back to batch {g}: the query starts after these offsets "
                             f"(offsets/{g}):")
            lines += source_offsets_lines(diag.offsets_after.get(g, {}))
            if diag.no_input_batches:
                lines.append(f"    {_batches(diag.no_input_batches).capitalize()} read no new "
                             "input (they advanced the watermark or ran timeouts): Spark does "
                             "not run them again until new data arrives, and their evictions "
                             "and output come with that data's batch.")
            lines.append("    Safe when the sources still hold that input (Kafka: retention covers "
                         "those offsets). Sinks see those batches again: fine for idempotent sinks "
                         "(file sink, Delta, foreachBatch keyed on the batch id).")
    if broken_state:
        lines.append(f"(b) start a new checkpoint: no input is skipped if the new query starts "
                     f"after the last committed batch {c} (offsets/{c}):")
        lines += source_offsets_lines(diag.offsets_after.get(c, {}))
        lines.append("    The new query's state starts empty: aggregates, deduplication and "
                     "join buffers forget everything before it.")
    return lines


def _batches(ids: list[int]) -> str:
    """``batch 4``, ``batches 4..6`` or ``batches 4, 6``."""
    return f"batch{'es' if len(ids) > 1 else ''} {id_ranges(ids)}"


# -- the summary -----------------------------------------------------------------------------------
def resume_batch_id(diag: Diagnosis, plan: Plan) -> int | None:
    """The last batch a restart can go on from: the last good one, or earlier when a damaged log
    file makes the repair roll back further (a commit without its offsets entry)."""
    g, target = diag.last_good_batch_id, plan.target_batch_id
    if plan.moves and target is not None and target >= 0 and (g is None or target < g):
        return target
    return g


def summarize(summary, result: Recovery) -> None:
    """The runbook's keys and findings in the run summary."""
    diag, plan, outcome = result.diagnosis, result.plan, result.outcome
    summary.details.update({
        "last_committed_batch_id": diag.last_committed_batch_id,
        "last_good_batch_id": resume_batch_id(diag, plan),
        "broken": diag.broken(),
        "plan": plan.summary(),
        "loads": diag.loads,
        "activity": diag.activity_lines(),
    })
    undone = bool(outcome and outcome.applied and outcome.mode == "undo")
    if diag.unconfirmed and not undone:  # an active query: no two listings agreed
        summary.add_finding("warning", "query_active_unconfirmed", diag.verdict())
    # After an undo the diagnosis describes the checkpoint as it was before: no finding of it.
    damaged_logs = [p for p in diag.problems if p.critical is not None and not undone]
    for p in damaged_logs:  # Spark fails on it at restart (critical), or runs on (warning)
        summary.add_finding("critical" if p.critical else "warning",
                            "log_format_unknown" if p.damage == "unknown" else "log_file_damaged",
                            f"{p.path}: {p.problem}")
    if undone:
        summary.details["broken"] = None
        summary.add_finding("info", "diagnosis_before_undo",
                            "the diagnosis above describes the checkpoint before the undo; run "
                            "mode=\"diagnose\" to judge it as it is now")
    elif diag.state_does_not_load and not any(p.critical for p in damaged_logs):
        summary.add_finding("critical", "state_does_not_load", diag.verdict())
    elif damaged_logs or diag.unconfirmed:
        pass  # said above
    elif diag.reader_limits:
        summary.add_finding("warning", "state_unreadable_by_reader", diag.verdict())
    elif diag.nothing_broken:
        summary.add_finding("info", "nothing_broken", diag.verdict())
    else:
        summary.add_finding("warning" if any(not p.problem.startswith("offsets entry without")
                                             for p in diag.problems) else "info",
                            "broken_files", diag.verdict())
    summarize_change(summary, ROLLBACK, None, outcome)
    # 05's "applied" says that the mode it ran (the rollback, or the undo) was applied.
    summary.details["applied"] = bool(outcome and outcome.applied)


def way_back_lines(demo: DemoResult) -> list[str]:
    """The demo's rollback, restart and comparison with the intact copy, as the reader sees it."""
    return [demo.rolled_back.lines[-1], f"restarted: {demo.reruns} batches re-run",
            *diff_lines(demo.same, "never broken", f"at batch {demo.batch_id}")]


def undo_lines(demo: DemoResult) -> list[str]:
    """The demo's undo, and whether every file came back byte for byte."""
    return [demo.undone.lines[-1],
            f"same bytes as before the rollback: {demo.byte_for_byte} ({demo.files} files, "
            "sidecars included)"]


def what_this_showed(demo: DemoResult) -> list[str]:
    """The demo's lessons, each with the figures of this run: what one damaged file breaks and
    the last good batch found (its diagnosis), what Spark answers when the state folder is gone
    (``deleted``), the rollback of its plan (``rolled_back``) and the restart compared with the
    intact copy (``same``: each store compared), and the undo (``undone``; ``byte_for_byte``: the
    checksums of the checkpoint's ``files`` equal the ones taken before the rollback)."""
    diag, plan, deleted, done = demo.diagnosis, demo.plan, demo.deleted, demo.rolled_back
    same, undone, byte_for_byte, files = demo.same, demo.undone, demo.byte_for_byte, demo.files
    c, g = diag.last_committed_batch_id, diag.last_good_batch_id
    lines = []
    damaged = [p for p in diag.problems if p.first_batch_id is not None]
    if damaged and c is not None and g is not None and g < c:
        names = {op["operator_id"]: op["operator_name"] for op in diag.operators}
        intact = sorted({f"operator {r.operator_id} ({names.get(r.operator_id, r.store_name)})"
                         for r in diag.load_test if r.ok})
        chained = damaged[0].path.endswith((".delta", ".changelog"))
        lines.append(f"one damaged file, {damaged[0].path}, broke the state of "
                     f"{_batches(list(range(g + 1, c + 1)))}"
                     + (": each later version replays it on top of the last snapshot"
                        if chained else "")
                     + (f", while {', '.join(intact)} still loaded" if intact else "")
                     + (f" ({len(damaged)} damaged files in all)" if len(damaged) > 1 else ""))
    if diag.retained is not None and g is not None:
        lo, hi = diag.retained
        by_files = [p.batch_id for p in diag.probes if p.by == "files" and not p.ok]
        lines.append(f"the last good batch, {g}, took {diag.loads} state load"
                     f"{'s' if diag.loads != 1 else ''} to find instead of {hi - lo + 1}, one per "
                     "retained batch: " + (f"the damaged files ruled out "
                                           f"{_and(by_files)} without a Spark job"
                                           if by_files else "a bisection of Spark's own loads"))
    error = re.search(r"\[([A-Z_.]+)\]", deleted or "")
    if error:
        lines.append(f"deleting the state folder is no way back on Spark 4: the restart failed "
                     f"with {error.group(1)}, as its offsets log says stateful batches ran")
    elif deleted:
        lines.append(f"without the state folder, {deleted}")
    rows = [(d.label, d.found) for d in same]
    equal = all_equal(same)
    if done is not None and done.verified:
        lines.append(f"the rollback to batch {plan.target_batch_id} moved {len(plan.moves)} files "
                     f"aside, journaled; re-running {c - g} batches from the source gave "
                     + ("the state of the run that never broke" if equal else
                        "a state DIFFERENT from the run that never broke")
                     + (f" ({' and '.join(f'{n} rows of {label}' for label, n in rows)})"
                        if rows else ""))
    if undone is not None:
        lines.append(f"undo, from the journal, put back all {files} files, sidecars included, "
                     "byte for byte" if undone.verified and byte_for_byte else
                     f"undo did NOT give back the {files} files as they were")
    return lines


def _and(ids: list[int]) -> str:
    """``batch 5``, ``batches 5 and 3``, ``batches 5, 4 and 3``: in the order given."""
    words = [str(i) for i in ids]
    return ("batch " + words[0] if len(words) == 1 else
            "batches " + ", ".join(words[:-1]) + " and " + words[-1])


