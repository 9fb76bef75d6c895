"""Try it yourself: a rollback further back."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.running.exercise import Exercise

from state_runbooks.safety.diagnosis.diagnose import Diagnosis
from .plan import plan_rollback


def try_it(ckpt: Checkpoint, diag: Diagnosis) -> Exercise | None:
    """How many files a rollback one batch before the last good one moves aside (None: there
    is no earlier batch to go back to)."""
    good = diag.last_good_batch_id
    if good is None or good < 1:
        return None
    plan = plan_rollback(ckpt, diag, good - 1)
    return Exercise(f"With target_batch_id={good - 1} (one batch before the last good batch, "
                    f"{good}), how many files does the rollback plan move aside (sidecars not "
                    "counted)?", len(plan.moves),
                    f"the plan moves the offsets and commits entries after batch {good - 1} and "
                    "every state file of a later version: "
                    + ", ".join(plan.moves[:4]) + (", ..." if len(plan.moves) > 4 else ""))
