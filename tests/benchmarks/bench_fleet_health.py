"""13_fleet_health: a fleet run over a root of small checkpoints against the bare Spark reads it
wraps, at 50, 100 and 200 checkpoints.

The root holds copies of one real checkpoint (a deduplication on 2 partitions, 4 batches: the
production shape of a few small queries). The bare side is the smallest Spark work a fleet check
cannot do without: per checkpoint, Spark's ``state-metadata`` and a row count of its state with
Spark's ``statestore`` reader, run as concurrently as the fleet run (``PARALLELISM`` at once). The
targets: the fleet run within 1.5x of the bare reads, its time linear in the number of checkpoints
(the time per checkpoint at 200 within 1.5x of that at 50), and the driver's memory flat.
"""
from __future__ import annotations

import os
import shutil
import time

SIZES = (50, 100, 200)
PARALLELISM = 4
# Checkpoints each side reads once, untimed, before any size is measured: more than Spark's
# parallelPartitionDiscovery.threshold (32), so the warm-up takes the way every size takes (the
# fleet's files listed in a Spark job), not only the driver's listing.
WARM_UP = 40
REPEATS = 2  # per size: each side first once


def build_root(spark, folder, count: int) -> list[str]:
    """``count`` copies of one demo checkpoint under ``folder/root``, stopped an hour ago."""
    from state_runbooks.demos.checkpoints import build_demo_checkpoint

    source = os.path.join(folder, "source")
    if not os.path.exists(source):
        build_demo_checkpoint(spark, "dedup", source, 4, "hdfs", 20, 2)
    paths = []
    stamp = time.time() - 3600
    for i in range(count):
        path = os.path.join(folder, "root", f"team-{i % 10}", f"query-{i:03d}")
        if not os.path.exists(path):
            shutil.copytree(source, path)
            for where, _dirs, names in os.walk(path):
                for name in names:
                    os.utime(os.path.join(where, name), (stamp, stamp))
        paths.append(path)
    return paths


def bare_reads(spark, paths: list[str]) -> int:
    """State metadata and a row count per checkpoint, ``PARALLELISM`` at once."""
    from concurrent.futures import ThreadPoolExecutor

    def one(path: str) -> int:
        spark.read.format("state-metadata").load(path).collect()
        return spark.read.format("statestore").load(path).count()

    with ThreadPoolExecutor(max_workers=PARALLELISM) as pool:
        return sum(pool.map(one, paths))


def bench(ctx, sizes=SIZES) -> list[dict]:
    from state_runbooks.runbooks import fleet_health as fh

    folder = str(ctx.folder / "fleet")
    paths = build_root(ctx.spark, folder, max(sizes))
    # The JVM's warm-up, once for every size (each side on the same 20 checkpoints), then each
    # size measured twice, each side first once: which side runs first matters (run.py).
    fh.run_fleet(ctx.spark, paths[:WARM_UP], state_rows="metadata", parallelism=PARALLELISM)
    bare_reads(ctx.spark, paths[:WARM_UP])
    results, per_checkpoint = [], {}
    for n in sizes:
        chosen = paths[:n]

        def fleet():
            run = fh.run_fleet(ctx.spark, chosen, state_rows="metadata", parallelism=PARALLELISM)
            assert len(run.examinations) == n and run.counts() == {"ok": n}, run.counts()

        result = ctx.side_by_side(
            f"[{n} checkpoints] a fleet run vs state metadata and a row count per checkpoint",
            fleet, lambda: bare_reads(ctx.spark, chosen), target=1.5, warm_up=False,
            repeats=REPEATS)
        per_checkpoint[n] = result["runbook_s"] / n
        results.append(result)
    first, last = min(sizes), max(sizes)
    results.append(ctx.report(f"the fleet run's time per checkpoint at {last} over that at "
                              f"{first}", round(per_checkpoint[last] / per_checkpoint[first], 2),
                              "x", "<= 1.5 (linear)"))
    for n in (first, last):  # flat: the same at the smallest fleet and the largest
        results += ctx.driver_heaps(f"[{n} checkpoints]", lambda n=n: fh.run_fleet(
            ctx.spark, paths[:n], state_rows="metadata", parallelism=PARALLELISM),
            "a fleet run ran")
    return results
