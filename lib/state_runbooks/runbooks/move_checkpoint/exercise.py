"""Try it yourself: the moved source started elsewhere."""
from __future__ import annotations

from state_runbooks.running.exercise import Exercise

from .start import EARLIEST, expected_rows, plan_start


def try_it(spark, checks) -> Exercise | None:
    """How many rows the first batch after the move reads with ``start_at=earliest`` (None:
    no source moves)."""
    moving = checks.moves.moving if checks and checks.moves else []
    if not moving or moving[0].new.kind != "file":
        return None
    source = moving[0]
    start = plan_start(spark, source.old, source.new, EARLIEST)
    rows = expected_rows(spark, source.new, start)
    return Exercise("With start_at=earliest instead of read_before, how many rows does the first "
                    "batch after the move read from the moved folder?", rows,
                    f"no file counts as read, so all {len(start.to_read)} files are new input "
                    "to Spark: the events already counted are counted again")
