"""Try it yourself: a drop of one user's keys."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.running.exercise import Exercise

from .plan import plan_rewrite

DROP = "key.user_id = 'user-1'"


def try_it(ckpt: Checkpoint) -> Exercise:
    """How many rows a drop of user-1's keys removes from the demo's windowed counts."""
    plan = plan_rewrite(ckpt, DROP)
    dropped = sum(plan.rows_dropped.values())
    return Exercise(f'With drop_keys_where="{DROP}", how many rows does the rewrite drop?',
                    dropped, f"user-1 has a row in each of the windows the state still holds: "
                    f"{dropped} of {sum(plan.rows_before.values())}")
