"""The fleet's history: one row per checkpoint per run, appended once per run to a table Spark
writes (Parquet by default, Delta, or a catalog table), and read back for each checkpoint's
growth since the runs before (``core.growth``'s one rule for "still growing")."""
from __future__ import annotations

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.core.growth import is_rising, least_squares_slope

FORMATS = ("parquet", "delta", "table")
DAY_MS = 86_400_000
# The table's columns, in order: what a trend query needs of each checkpoint's run.
COLUMNS = (("run_ms", "bigint"), ("checkpoint_path", "string"), ("query_id", "string"),
           ("status", "string"), ("rows", "bigint"), ("bytes", "bigint"), ("files", "bigint"),
           ("last_committed_batch", "bigint"), ("age_hours", "double"), ("skew", "double"),
           ("growth_per_day", "double"), ("findings", "string"))
SCHEMA = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)


def history_format(history_path: str, given: str = "") -> str:
    """parquet, delta or table: ``given``, else a name without a scheme or slash is a table."""
    fmt = (given or "").strip().lower()
    if fmt and fmt not in FORMATS:
        raise RunbookError(f"history_format={given!r} is not one of {', '.join(FORMATS)}")
    if fmt:
        return fmt
    return "table" if "/" not in history_path and ":" not in history_path else "parquet"


def history_row(run_ms: int, exam) -> dict:
    f = exam.figures
    return {"run_ms": run_ms, "checkpoint_path": exam.checkpoint_path,
            "query_id": f.get("query_id"), "status": exam.status, "rows": f.get("rows"),
            "bytes": f.get("bytes"), "files": f.get("files"),
            "last_committed_batch": f.get("last_committed_batch"),
            "age_hours": _float(f.get("age_hours")), "skew": _float(f.get("skew")),
            "growth_per_day": _float(f.get("growth_per_day")),
            "findings": ",".join(x.code for x in exam.findings)}


def _float(value):
    return None if value is None else float(value)


def read_history(spark, history_path: str, fmt: str = "parquet") -> list[dict]:
    """Every row of the history table, as dicts; none when it is not written yet."""
    if not history_path:
        return []
    with spark_errors(f"reading the fleet history {history_path}"):
        if fmt == "table":
            if not spark.catalog.tableExists(history_path):
                return []
            df = spark.table(history_path)
        else:
            from state_runbooks.core.fs import open_fs
            if not open_fs(spark, history_path).exists():
                _require_source(spark, history_path, fmt)
                return []
            df = spark.read.format(fmt).load(history_path)
        return [r.asDict() for r in df.select(*[c for c, _ in COLUMNS]).collect()]


def _require_source(spark, history_path: str, fmt: str) -> None:
    """A history format this Spark cannot write is refused before the run, in one line, not
    after every checkpoint was examined: Delta is a package of its own."""
    if fmt != "delta":
        return
    try:
        with spark_errors(f"reading the fleet history {history_path}"):
            spark.read.format(fmt).load(history_path).schema  # noqa: B018 - resolves the source
    except RunbookError as error:
        if error.error_class == "DATA_SOURCE_NOT_FOUND":
            raise RunbookError("history_format=delta needs Delta Lake on this Spark (the "
                               "delta-spark package and its jars, or a Databricks runtime): "
                               "install it, or keep the history as parquet or in a catalog "
                               "table") from None
        # Delta is there: the table is not written yet


def append_history(spark, history_path: str, rows: list[dict], fmt: str = "parquet") -> int:
    """This run's rows appended to the table in one write; how many."""
    if not history_path or not rows:
        return 0
    df = spark.createDataFrame([tuple(r[c] for c, _ in COLUMNS) for r in rows], SCHEMA)
    with spark_errors(f"appending to the fleet history {history_path}"):
        writer = df.coalesce(1).write.mode("append")
        if fmt == "table":
            writer.saveAsTable(history_path)
        else:
            writer.format(fmt).save(history_path)
    return len(rows)


def growth_since(previous: list[dict], run_ms: int, rows: int | None) -> dict:
    """Growth of one checkpoint's rows over the runs before and this one: rows per day (the
    least-squares slope over the runs), that as a share of the first run's rows, and whether the
    rows only grew (:func:`~state_runbooks.core.growth.is_rising`)."""
    points = sorted((int(r["run_ms"]), int(r["rows"])) for r in previous
                    if r.get("rows") is not None and int(r["run_ms"]) < run_ms)
    if rows is None or not points:
        return {"growth_per_day": None, "previous_rows": None, "runs": len(points)}
    points.append((run_ms, int(rows)))
    days = [(ms - points[0][0]) / DAY_MS for ms, _ in points]
    per_day = least_squares_slope(days, [n for _, n in points])
    first = points[0][1]
    return {"growth_per_day": round(per_day / first, 4) if first else None,
            "rows_per_day": round(per_day, 1), "previous_rows": points[-2][1],
            "runs": len(points) - 1,
            "only_grew": is_rising([n for _, n in points], min_points=2)}


def judge_growth(exam, previous: list[dict], run_ms: int, max_growth_per_day: float) -> None:
    """Rows that only grew across the runs, faster than ``max_growth_per_day`` of the first
    run's: growth toward the heap, for 02 to project."""
    g = growth_since(previous, run_ms, exam.figures.get("rows"))
    exam.figures.update(g)
    share = g.get("growth_per_day")
    if g.get("only_grew") and share is not None and share > max_growth_per_day:
        exam.add("state_growing", "warning",
                 f"rows only grew over {g['runs'] + 1} runs ({g['previous_rows']:,} -> "
                 f"{exam.figures['rows']:,} since the previous), {share:+.0%} a day (> "
                 f"{max_growth_per_day:.0%}): project it against the heap", "02")
