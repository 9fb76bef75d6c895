"""11_trace_key: one key's trace against a full scan of its operator's state.

At the production shape (Spark's default 200 partitions, 100 retained batches): a key present at
the newest batch, its condition fixing every key column (built from a row Spark's reader
returns), traced over the whole retained range, against the bare Spark call that answers "is it
there" without the runbook: a full scan of the operator's state at the newest batch (the
target: within 0.1x); and, for context, the trace of the newest batch alone.
"""
from __future__ import annotations

PRODUCTION_SHAPES = ("window_agg_many_users-rocksdb_changelog", "dedup-hdfs")


def bench(ctx) -> list[dict]:
    import production_shape

    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.core.operators import state_units
    from state_runbooks.core.state_reader import read_unit
    from state_runbooks.runbooks import trace_key as tk

    results = []
    for name, path in ctx.production_shapes(*PRODUCTION_SHAPES):
        ckpt = Checkpoint(ctx.spark, path)
        unit = state_units(ckpt)[0]
        key_where = tk.key_where_for(read_unit(ckpt, unit).select("key").first().key)
        last = ckpt.last_committed_batch_id
        first, _ = ckpt.retained_batch_range(unit.operator_id)
        kind = production_shape.kind(name)
        traced = []

        def trace():
            traced.append(tk.trace_key(ckpt, key_where, unit.operator_id, unit.store_name))

        def newest():
            tk.trace_key(ckpt, key_where, unit.operator_id, unit.store_name, last, last)

        def scan():
            read_unit(ckpt, unit).count()

        results.append(ctx.side_by_side(
            f"[{kind}: {name}] one key traced over batches {first}..{last} vs a full scan of "
            "the operator's state at the newest batch", trace, scan, target=0.1,
            repeats=min(ctx.repeats, 3)))
        done = traced[-1].traces[0]
        print(f"    {done.partitions_read} of {unit.num_partitions} partitions read "
              f"({'a view of its files' if not done.view_why else done.view_why}), the history "
              f"by {done.read_by}", flush=True)
        results.append(ctx.side_by_side(
            f"[{kind}: {name}] one key at the newest batch vs the same full scan", newest, scan,
            target=None, repeats=min(ctx.repeats, 3)))
    return results
