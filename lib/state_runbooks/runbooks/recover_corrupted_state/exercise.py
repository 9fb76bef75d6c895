"""Try it yourself: a rollback further back."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.running.exercise import Exercise, with_change

from state_runbooks.safety.diagnosis.diagnose import Diagnosis
from .plan import plan_rollback


def try_it(ckpt: Checkpoint, diag: Diagnosis, target_batch_id: int = -1) -> Exercise | None:
    """How many files a rollback one batch before the last good one moves aside (None: there
    is no earlier batch to go back to); ``target_batch_id``: the run's own (-1: the last good
    batch)."""
    good = diag.last_good_batch_id
    if good is None or good < 1:
        return None
    plan = plan_rollback(ckpt, diag, good - 1)
    current = (target_batch_id if target_batch_id >= 0 else
               f"-1 (the last good batch, {good})")
    return Exercise(f"{with_change('target_batch_id', good - 1, current)} one batch before the "
                    "last good batch, how many files does the rollback plan of step 5 move aside "
                    "(sidecars not counted)?", len(plan.moves),
                    f"the plan moves the offsets and commits entries after batch {good - 1} and "
                    "every state file of a later version: "
                    + ", ".join(plan.moves[:4]) + (", ..." if len(plan.moves) > 4 else ""))
