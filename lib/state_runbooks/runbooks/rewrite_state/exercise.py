"""Try it yourself: a drop of one user's keys."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.running.exercise import Exercise, with_change

from .plan import Plan, plan_rewrite

DROP = "key.user_id = 'user-1'"


def try_it(ckpt: Checkpoint, drop_keys_where: str = "", planned: Plan | None = None) -> Exercise:
    """How many rows a drop of user-1's keys removes from the demo's windowed counts
    (``drop_keys_where``: the run's own, named in the question; ``planned``: the run's plan,
    reused when it is that drop)."""
    plan = (planned if planned is not None and planned.drop_keys_where == DROP else
            plan_rewrite(ckpt, DROP))
    dropped = sum(plan.rows_dropped.values())
    change = with_change("drop_keys_where", f'"{DROP}"',
                         f'"{drop_keys_where}"' if drop_keys_where else '"" (nothing dropped)')
    return Exercise(f"{change} how many rows does the rewrite drop?",
                    dropped, f"user-1 has a row in each of the windows the state still holds: "
                    f"{dropped} of {sum(plan.rows_before.values())}")
