"""What the comparison, the checks and the move look like to the reader, the way without the
move, the run summary's keys and findings, and what the demo showed."""
from __future__ import annotations

from state_runbooks.common.formatting import format_utc
from state_runbooks.safety.change import new_checkpoint_lines, summarize_change
from state_runbooks.safety.safekeeping import Outcome

from .apply import MOVE, Moved
from .demo import DemoResult
from .what_moves import Moves


def comparison_lines(moves: Moves) -> list[str]:
    """Each source old and new, what a restart does with it, and Spark's check of the state."""
    lines = [f"offsets log format {2 if moves.named else 1}"
             f"{' (named sources)' if moves.named else ''}; the move stands on batch "
             f"{moves.batch_id}, the last committed"]
    for v in moves.verdicts:
        lines.append(f"{v.label}: {v.old} -> {v.new}: {v.verdict} at restart ({v.why})"
                     + (f"; Spark raises: {v.error}" if v.error else ""))
    check = moves.spark_check
    if moves.move == "location":
        lines.append("the state: checked after the copy, by Spark restarting the job on the "
                     "result (the original untouched whatever it finds)")
    elif check is None or not check.available:
        lines.append(f"the state: unknown ({check.reason if check else 'not checked'})")
    elif check.error_class:
        lines.append(f"the state: Spark's restart check raises {check.error_class}: "
                     f"{check.message}")
    else:
        lines.append("the state: Spark's restart check passes (every operator and store "
                     "schema as the checkpoint holds them)")
    return lines


def alternatives_lines(ckpt) -> list[str]:
    """The way without a move: a new checkpoint, from the offsets the old one logged."""
    return new_checkpoint_lines(ckpt, "Without the move:", "reading the new source")


def summarize(summary, out: Outcome | None) -> None:
    """The move's keys and findings in the run summary (``out``: the move or the undo)."""
    moved = out if isinstance(out, Moved) else None
    checks = moved.checks if moved else None
    undo = out is not None and out.mode == "undo"
    restart = moved.rehearsal if moved else None
    summary.details.update({
        "move": moved.move if moved else None,
        "output_path": (moved.output_path if moved else None),
        "sources": moved.sources if moved else [],
        "stores": moved.stores if moved else {},
        # Spark's own figures after the first batch on the result (the restart on a copy).
        "state_after_first_batch": [
            {"operator": op.get("operatorName"), "rows": op.get("numRowsTotal")}
            for op in (restart.rehearsal.progress or {}).get("stateOperators", [])]
        if restart else [],
        "watermark_carried": moved.watermark_carried if moved else None,
        "late_rows_sampled": restart.late_rows if restart else None,
        "verified": out.verified if out is not None and out.applied else None})
    if restart and restart.late_rows:
        summary.add_finding("warning", "late_rows_after_move",
                            f"the first batch after the move dropped {restart.late_rows} row(s) "
                            "behind the carried watermark: the new source's events are older")
    summarize_change(summary, MOVE, None if undo else checks, out,
                     applied_text=(f"{moved.move} moved and verified: Spark restarted the job on "
                                   "a copy of the result" if moved else ""))


def demo_lines(result: DemoResult) -> list[str]:
    """What each step of the demo found."""
    def verdicts(out) -> list[str]:
        return [f"  {line}" for line in out.lines if line.startswith(("verified", "NOT",
                                                                      "warning"))]
    return ([f"at a new location ({result.moved.output_path}):"] + verdicts(result.moved)
            + [f"  the original checkpoint unchanged: {result.original_untouched}",
               f"the job continued there for a batch, and a run whose folder never moved read "
               f"the same files: the same {result.output_rows} output rows "
               f"({result.same_output}), the same {result.state_rows} state rows "
               f"({result.same_state})", "in place on a copy, with backup and journal:"]
            + verdicts(result.in_place)
            + [f"  undone: the same bytes as before ({result.undone_same_bytes}, "
               f"{result.files} files)"])


def what_this_showed(result: DemoResult) -> list[str]:
    """The demo's closing bullets, computed from its one result."""
    source = result.moved.sources[0] if result.moved.sources else {}
    in_place = "verified" if result.in_place.verified else "NOT verified"
    return [
        f"the folder moved ({source.get('before')} -> {source.get('after')}): Spark alone "
        "refuses the restart (its file source reads the last batch's files again below the new "
        "folder), and a new checkpoint would lose the state",
        f"the move wrote the moved source's start into the last two offsets entries "
        f"({source.get('offset')}) and a new seen-files log; the query id, the batch numbering, "
        f"the watermark ({format_utc(result.moved.watermark_carried)}) and every state file stayed as "
        "they were",
        f"Spark restarted the job on a copy of the result and its first batch read "
        f"{result.rows_read} rows: the new file's, none of the files read before the move",
        f"continued at the new location, the job wrote the same {result.output_rows} rows and "
        f"holds the same {result.state_rows} state rows as a run that never moved "
        f"({result.same_output and result.same_state})",
        f"in place, with backup and journal ({in_place}), then undone: the same bytes as "
        f"before ({result.undone_same_bytes}, {result.files} files, sidecars included)",
    ]
