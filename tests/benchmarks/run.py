"""make bench: runbooks against the bare Spark calls they wrap, measured side by side in one run.

Machines are shared and noisy, so every comparison alternates the two sides and reports the ratio of
medians; no test asserts a time. Targets are printed next to the measured ratios.

    python tests/benchmarks/run.py [--rows 1000000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def side_by_side(label: str, runbook, bare, repeats: int, target: float, warm_up: bool = True
                 ) -> dict:
    """Alternate runbook and bare ``repeats`` times; print medians and their ratio.

    In-process comparisons first run each side once untimed, so that neither pays the JVM's
    warm-up (class loading, code generation) for the other."""
    if warm_up:
        runbook()
        bare()
    runbook_times, bare_times = [], []
    for _ in range(repeats):
        runbook_times.append(timed(runbook)[0])
        bare_times.append(timed(bare)[0])
    r, b = statistics.median(runbook_times), statistics.median(bare_times)
    ratio = r / b
    verdict = "within" if ratio <= target else "OVER"
    print(f"{label}\n    runbook {r:7.2f} s   bare {b:7.2f} s   ratio {ratio:5.2f}x   "
          f"(target <= {target}x: {verdict})", flush=True)
    return {"label": label, "runbook_s": r, "bare_s": b, "ratio": ratio, "target": target}


def build_checkpoint(spark, rows: int, folder: Path) -> str:
    """A deduplication state of ``rows`` rows: two batches of ``rows`` events (each id twice)."""
    from state_runbooks.demo import build_demo_checkpoint
    run = build_demo_checkpoint(spark, "dedup", str(folder / "dedup-1m"), batches=2,
                                rows_per_batch=rows, partitions=8)
    total = sum(op["numRowsTotal"] for op in run.last_state_operators)
    print(f"checkpoint: {total:,} state rows in 8 partitions, {run.checkpoint_path}", flush=True)
    return run.checkpoint_path


BARE_PROCESS = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rows = (spark.read.format("statestore").load(sys.argv[1])
            .groupBy("partition_id").count().collect())
    print(sum(r["count"] for r in rows))
""")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="state rows (default 1,000,000)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from state_runbooks import inspection
    from state_runbooks.checkpoint import Checkpoint
    from state_runbooks.notebooks import execute, resolve_notebook
    from state_runbooks.session import get_spark

    spark = get_spark()
    results = []
    with tempfile.TemporaryDirectory(prefix="state-runbooks-bench-") as tmp:
        folder = Path(tmp)
        checkpoint = build_checkpoint(spark, args.rows, folder)
        ckpt = Checkpoint(spark, checkpoint)
        store = ckpt.stores()[0]
        batch = ckpt.resolve_batch()

        print("\n[03 inspect state]")
        results.append(side_by_side(
            "per-store scan (rows, bytes, partitions, expiry) vs statestore count()",
            lambda: inspection.inspect_store(ckpt, store, batch),
            lambda: spark.read.format("statestore").load(ckpt.root).count(),
            args.repeats, 1.3))

        notebook = resolve_notebook("03_inspect_state")
        script = folder / "bare.py"
        script.write_text(BARE_PROCESS)
        results.append(side_by_side(
            "whole notebook under papermill vs a bare process counting rows per partition",
            lambda: execute(notebook, folder / "out", {"checkpoint_path": checkpoint}, html=False),
            lambda: subprocess.run([sys.executable, str(script), checkpoint], check=True,
                                   capture_output=True),
            args.repeats, 1.5, warm_up=False))

    over = [r for r in results if r["ratio"] > r["target"]]
    print(f"\n{len(results) - len(over)} of {len(results)} ratios within target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
