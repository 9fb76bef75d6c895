"""make bench: runbooks against the bare Spark calls they wrap, measured side by side in one run.

Machines are shared and noisy, so every comparison alternates the two sides and reports the ratio of
medians; no test asserts a time. A comparison with a target is a runbook against the smallest Spark
work that answers its question; one without (``target=None``, printed as context) says where the
time goes or what a narrower question would cost, and is not counted against the targets. Each ``bench_<runbook>.py`` beside this file defines
``bench(ctx) -> list[dict]`` and uses ``ctx.side_by_side``; they run in name order.

    python tests/benchmarks/run.py [--repeats 5] [--only inspect_state] [--demo-scale-only]
                                   [--shapes dedup-hdfs,join-rocksdb_changelog]

Production-shape checkpoints (``production_shape.py``) are built once, never by a bench. Runs take a
lock (``out/bench.lock``), so two bench runs on one machine wait for each other instead of sharing
its cores and measuring each other.
"""
from __future__ import annotations

import argparse
import fcntl
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCK = HERE.parents[1] / "out" / "bench.lock"
# The benches' own session builds 02's 1,000,000-row checkpoints, among them a join whose
# HDFS-backed provider holds the versions of its four stores in memory while it runs: more than
# the 2 GB a runbook's session gets. Comparisons in this session run both sides in it; notebooks
# and bare processes start their own.
BENCH_DRIVER_MEMORY = "6g"
sys.path.insert(0, str(HERE))
import production_shape  # noqa: E402 - beside this file, not a package


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


@dataclass
class BenchContext:
    spark: object
    folder: Path  # a temporary folder for checkpoints and outputs
    repeats: int
    production: bool = True  # also measure at the production shape, where built
    demo_scale: bool = True  # also measure at demo scale (False: the built shapes only)
    shapes: tuple = ()  # only these production shapes (empty: every one a bench names)

    def production_shapes(self, *names: str):
        """(name, checkpoint path) of each named production shape (none named: every shape) that is
        built; a line saying how to build each one that is not."""
        if not self.production:
            return []
        names = names or tuple(production_shape.SHAPES_BY_NAME)
        found = [(name, production_shape.ensure(self.spark, name)) for name in names
                 if not self.shapes or name in self.shapes]
        return [(name, str(path)) for name, path in found if path is not None]

    def notebook_vs_process(self, label: str, notebook: str, parameters, bare_script: str,
                            bare_args, target: float | None = 1.5,
                            repeats: int | None = None) -> dict:
        """A whole notebook under papermill against a bare Python process (``bare_script`` with
        ``bare_args``): both start their own Spark, so neither is warmed up by the other.
        ``parameters`` and ``bare_args`` may be functions giving each run its own (a fresh copy of
        a checkpoint that the run changes, say)."""
        from state_runbooks.cli.execution import execute
        from state_runbooks.cli.runbook_files import resolve_notebook

        script = self.folder / f"bare-{len(list(self.folder.glob('bare-*.py')))}.py"
        script.write_text(bare_script)
        path = resolve_notebook(notebook)
        out = self.folder / "out"
        result = self.side_by_side(
            label,
            lambda: execute(path, out, _each_run(parameters), html=False),
            lambda: subprocess.run([sys.executable, str(script), *_each_run(bare_args)],
                                   check=True, capture_output=True),
            target=target, warm_up=False, repeats=repeats)
        print(f"    where the notebook's time went (last run): "
              f"{cell_times(out / f'{path.stem}.ipynb')}", flush=True)
        return result

    def side_by_side(self, label: str, runbook, bare, target: float | None, warm_up: bool = True,
                     repeats: int | None = None) -> dict:
        """Alternate runbook and bare, each going first on every other repeat; print the medians
        and their ratio against ``target`` (None: a context figure, no target).

        In-process comparisons first run each side once untimed, so that neither pays the JVM's
        warm-up (class loading, code generation) for the other. Whichever side runs first after
        that still pays what is left of the warm-up (measured on 13's fleet at 200 checkpoints:
        1.04x with the bare reads first, 1.68x with the fleet run first), hence the turns."""
        if warm_up:
            runbook()
            bare()
        runbook_times, bare_times = [], []
        for repeat in range(repeats or self.repeats):
            if repeat % 2:
                bare_times.append(timed(bare)[0])
                runbook_times.append(timed(runbook)[0])
            else:
                runbook_times.append(timed(runbook)[0])
                bare_times.append(timed(bare)[0])
        r, b = statistics.median(runbook_times), statistics.median(bare_times)
        ratio = r / b
        verdict = ("context, no target" if target is None else
                   f"target <= {target}x: {'within' if ratio <= target else 'OVER'}")
        print(f"{label}\n    runbook {r:7.2f} s   bare {b:7.2f} s   ratio {ratio:5.2f}x   "
              f"({verdict})", flush=True)
        return {"label": label, "runbook_s": r, "bare_s": b, "ratio": ratio, "target": target}

    def driver_heaps(self, label: str, action, doing: str) -> list[dict]:
        """The driver's Python heap at its peak during ``action()`` (tracemalloc) and its JVM's
        heap in use after it (after a GC), each reported as one figure meant to stay flat."""
        import tracemalloc
        tracemalloc.start()
        try:
            action()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        jvm = self.spark._jvm
        jvm.java.lang.System.gc()
        runtime = jvm.java.lang.Runtime.getRuntime()
        used = runtime.totalMemory() - runtime.freeMemory()
        flat = "flat in the number of keys"
        return [self.report(f"{label} the driver's Python heap at its peak while {doing}",
                            peak / 1e6, "MB", flat),
                self.report(f"{label} the driver JVM's heap in use after it (after a GC)",
                            used / 1e6, "MB", flat)]

    def report(self, label: str, value: float, unit: str, target: str = "") -> dict:
        """A measured figure that is not a ratio (a count, say)."""
        print(f"{label}: {value:g} {unit}" + (f"   (target {target})" if target else ""),
              flush=True)
        return {"label": label, "value": value, "unit": unit, "target": target}


def cell_times(notebook: Path) -> str:
    """The slowest cells of an executed notebook, from papermill's metadata."""
    cells = json.loads(notebook.read_text())["cells"]
    timed = [(c["metadata"].get("papermill", {}).get("duration") or 0.0, i, c)
             for i, c in enumerate(cells) if c["cell_type"] == "code"]
    return ", ".join(f"cell {i} ({''.join(c['source']).splitlines()[0][:40]!r}) {d:.1f} s"
                     for d, i, c in sorted(timed, key=lambda t: t[0], reverse=True)[:4])


def _each_run(given):
    return given() if callable(given) else given


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="", help="run only bench_<ONLY>.py")
    parser.add_argument("--demo-scale-only", action="store_true",
                        help="skip the production-shape measurements")
    parser.add_argument("--shapes-only", action="store_true",
                        help="skip the demo-scale measurements of the benches that have shapes")
    parser.add_argument("--shapes", default="",
                        help="comma-separated production shapes to measure (default: all built)")
    args = parser.parse_args()
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"another bench run holds {LOCK}: waiting for it", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        return run(args)


def run(args) -> int:
    from state_runbooks.session.spark_session import get_spark

    spark = get_spark(conf={"spark.driver.memory": BENCH_DRIVER_MEMORY})
    results = []
    for path in sorted(HERE.glob("bench_*.py")):
        if args.only and path.stem != f"bench_{args.only}":
            continue
        print(f"\n[{path.stem.removeprefix('bench_')}]", flush=True)
        with tempfile.TemporaryDirectory(prefix="state-runbooks-bench-") as tmp:
            context = BenchContext(spark, Path(tmp), args.repeats,
                                   production=not args.demo_scale_only,
                                   demo_scale=not args.shapes_only,
                                   shapes=tuple(filter(None, args.shapes.split(","))))
            results += _load(path).bench(context)
    targeted = [r for r in results if "ratio" in r and r["target"] is not None]
    within = sum(r["ratio"] <= r["target"] for r in targeted)
    context = sum(1 for r in results if "ratio" in r and r["target"] is None)
    print_table(results)
    print(f"\n{within} of {len(targeted)} ratios within target ({context} context ratios beside)")
    return 0


def print_table(results: list[dict]) -> None:
    """Every figure of the run in one table, ratios side by side."""
    print(f"\n{'runbook s':>10} {'bare s':>8} {'ratio':>7} {'target':>7}  measured")
    for r in results:
        if "ratio" in r and r["target"] is None:
            print(f"{r['runbook_s']:10.2f} {r['bare_s']:8.2f} {r['ratio']:6.2f}x "
                  f"{'context':>7}  {r['label']}")
        elif "ratio" in r:
            verdict = "" if r["ratio"] <= r["target"] else "  OVER"
            print(f"{r['runbook_s']:10.2f} {r['bare_s']:8.2f} {r['ratio']:6.2f}x "
                  f"{r['target']:6.2f}x  {r['label']}{verdict}")
        else:
            print(f"{'':10} {'':8} {'':7} {'':7}  {r['label']}: {r['value']:g} {r['unit']}")


if __name__ == "__main__":
    sys.exit(main())
