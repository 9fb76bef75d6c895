"""Try it yourself: the napkin with a shorter watermark."""
from __future__ import annotations

import dataclasses

from state_runbooks.running.exercise import Exercise, with_change

from .napkin_estimate import Napkin, napkin

WATERMARK_SECONDS = 2.0


def try_it(est: Napkin) -> Exercise:
    """The rows the napkin holds with a 2 s watermark instead of the demo's."""
    inputs = dataclasses.replace(est.inputs, watermark_seconds=WATERMARK_SECONDS)
    changed = napkin(inputs)
    change = with_change("watermark_seconds", WATERMARK_SECONDS, est.inputs.watermark_seconds)
    return Exercise(f"{change} how many rows does the napkin say the state holds?", changed.rows,
                    f"a key stays until the watermark passes it: {changed.arrivals_per_batch:,} "
                    f"new keys a batch over {WATERMARK_SECONDS:g} s of delay plus the batch "
                    f"itself ({est.inputs.trigger_seconds:g} s) gives {changed.rows:,} rows")
