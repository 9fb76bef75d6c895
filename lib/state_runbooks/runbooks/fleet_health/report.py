"""What a reader of the fleet run sees: the fleet table (worst first), the plots from the
history, the JSON summary (one entry per folder found) and what the demo showed."""
from __future__ import annotations

from state_runbooks.common.formatting import format_bytes
from state_runbooks.running.results import Summary

from .fleet import FleetRun

# A checkpoint's status, as the run's summary counts it: unknown is never ok.
SUMMARY_SEVERITY = {"critical": "critical", "unknown": "warning", "warning": "warning"}


def fleet_table(run: FleetRun):
    """One row per folder, worst first: status, query, age, rows, bytes, growth, the worst
    finding and the runbook to open."""
    import pandas as pd

    rows = []
    for e in run.worst_first:
        f, worst = e.figures, e.worst
        opened = (worst.details.get("open") or {}) if worst else {}
        rows.append({"status": e.status, "checkpoint": e.checkpoint_path,
                     "query": (f.get("query_id") or "")[:8],
                     "age_h": f.get("age_hours"), "rows": f.get("rows"),
                     "bytes": format_bytes(f["bytes"]) if f.get("bytes") is not None else None,
                     "growth_per_day": f.get("growth_per_day"),
                     "finding": (f"{worst.code}: {worst.message}" if worst and
                                 worst.severity != "info" else
                                 (e.not_judged[0] if e.not_judged else "")),
                     "open": opened.get("runbook", "")})
    return pd.DataFrame(rows)


def status_lines(run: FleetRun) -> list[str]:
    counts = ", ".join(f"{n} {s}" for s, n in run.counts().items())
    return [f"{len(run.examinations)} folders under {', '.join(run.roots)} in {run.seconds:.1f} s: "
            f"{counts}"] + ([f"state files counted by {run.files_counted}"]
                            if run.files_counted else [])


def next_steps(run: FleetRun) -> list[str]:
    """Each finding that needs a person: the command that opens its runbook, filled in."""
    return [f"{e.checkpoint_path.removeprefix(e.root).lstrip('/') or e.checkpoint_path}: "
            f"{f.code}: {f.details['open']['command']}"
            for e in run.worst_first for f in e.findings
            if f.severity != "info" and "open" in f.details]


def plot_fleet(run: FleetRun):
    """Rows per checkpoint over the runs (from the history), and age against growth across the
    fleet."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    series: dict[str, list] = {}
    for r in run.history + [{"run_ms": run.run_ms, "checkpoint_path": e.checkpoint_path,
                             "rows": e.figures.get("rows")} for e in run.examinations]:
        if r.get("rows") is not None:
            series.setdefault(r["checkpoint_path"], []).append((r["run_ms"], r["rows"]))
    for path, points in sorted(series.items()):
        points.sort()
        left.plot([(ms - run.run_ms) / 60_000 for ms, _ in points], [n for _, n in points],
                  marker="o", label=path.rsplit("/", 1)[-1])
    left.set(title="Rows per checkpoint over the runs", xlabel="minutes before this run",
             ylabel="rows")
    left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    ages = [(e.figures.get("age_hours"), e.figures.get("growth_per_day") or 0, e)
            for e in run.examinations if e.figures.get("age_hours") is not None]
    right.scatter([a for a, _, _ in ages], [g for _, g, _ in ages],
                  c=["red" if e.status in ("critical", "unknown") else
                     "orange" if e.status == "warning" else "green" for _, _, e in ages])
    right.set(title="Age of the last commit and growth", xlabel="hours since the last commit",
              ylabel="growth per day (share)")
    fig.tight_layout()
    return fig


def summarize(summary: Summary, result: FleetRun) -> None:
    """``checkpoints``: one entry per folder found; a finding per checkpoint that needs a
    person (unknown counts as a warning), so ``fail_on`` acts on the worst."""
    summary.checkpoint_path = ", ".join(result.roots)
    summary.details["checkpoints"] = [e.to_dict() for e in result.worst_first]
    summary.details["counts"] = result.counts()
    summary.details["thresholds"] = dict(result.thresholds.__dict__)
    summary.details["history"] = {"path": result.history_path, "format": result.history_format,
                                  "rows_before": len(result.history), "appended": result.appended}
    summary.details["seconds"] = result.seconds
    summary.details["files_counted"] = result.files_counted
    for e in result.worst_first:
        severity = SUMMARY_SEVERITY.get(e.status)
        if severity is None:
            continue
        worst = e.worst
        text = (f"{worst.code}: {worst.message}" if worst and worst.severity != "info" and
                e.status != "unknown" else "; ".join(e.not_judged) or "not judged")
        summary.add_finding(severity, f"checkpoint_{e.status}", f"{e.checkpoint_path}: {text}",
                            {"checkpoint_path": e.checkpoint_path,
                             **({"open": worst.details["open"]} if worst and
                                "open" in worst.details else {})})


def what_this_showed(demo) -> list[str]:
    """The demo's closing bullets, from its two runs."""
    first, second = demo.first, demo.second
    return [
        f"one run examined {len(second.examinations)} folders under one root, up to "
        f"{demo.parallelism} at once: "
        + ", ".join(f"{n} {s}" for s, n in second.counts().items()),
        "each problem the demo made was found where it was made: "
        + "; ".join(f"{name} -> {e.status} ({', '.join(sorted({f.code for f in e.findings if f.severity != 'info'})) or 'no finding'})"
                    for name, e in demo.planted(second).items()),
        f"the history holds {len(second.history) + second.appended} rows after two runs "
        f"({first.appended} + {second.appended}); the growing checkpoint's rows went "
        f"{demo.growing_rows[0]:,} -> {demo.growing_rows[1]:,} between them",
        "nothing under the root changed: every file holds the same bytes before and after the "
        "run" + ("" if demo.unchanged else " (NOT SO: see the checks)"),
    ]
