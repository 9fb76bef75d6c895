"""The notebook's parameters checked against the checkpoint (``resolve_join``): the join operator,
its key and the names of the key's fields, each side's time column, and the time bounds, read from
the watermark's evictions when not given (``time_bounds_from_checkpoint``).
"""
from __future__ import annotations

import dataclasses
import math

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.spark_settings import WATERMARK_DELAY_METADATA
from state_runbooks.core.checkpoint import Checkpoint

from .history import _side_samples, history_method, key_history, unreadable_reason
from .spec import JoinSide, JoinSpec, TimeBounds, find_join_operator

NO_SUCH_COLUMN = "no_such_column"  # the wrong time column a run shows its refusal of


def _watermark_column(value_schema) -> tuple[str | None, int | None]:
    for f in value_schema.fields:
        if WATERMARK_DELAY_METADATA in (f.metadata or {}):
            return f.name, int(f.metadata[WATERMARK_DELAY_METADATA])
    return None, None


def _resolve_side(side: str, value_schema, time_column: str) -> JoinSide:
    from pyspark.sql import types as T
    columns = [f.name for f in value_schema.fields if f.name != "matched"]
    types = {f.name: f.dataType for f in value_schema.fields}
    wm_column, wm_delay = _watermark_column(value_schema)
    stamps = [c for c in columns if isinstance(types[c], (T.TimestampType, T.TimestampNTZType))]
    hint = (f"timestamp columns: {', '.join(stamps) or 'none'}"
            + (f"; the watermark is on {wm_column}" if wm_column else ""))
    source = "parameter"
    if not time_column:
        if wm_column is None:
            raise RunbookError(f"the {side} side's state has no column carrying a watermark: pass "
                               f"{side}_time_column ({hint})")
        time_column, source = wm_column, "checkpoint"
    if time_column not in columns:
        raise RunbookError(f"{side}_time_column {time_column!r} is not in the {side} side's state "
                           f"(columns: {', '.join(columns)}); {hint}")
    if time_column not in stamps:
        kind = types[time_column].simpleString()
        raise RunbookError(f"{side}_time_column {time_column!r} is {kind}, not a timestamp; {hint}")
    return JoinSide(side, time_column, source, wm_column, wm_delay, tuple(columns))


def resolve_join(ckpt: Checkpoint, operator_id: int = -1, left_time_column: str = "",
                 right_time_column: str = "", lower_bound_seconds: float | None = None,
                 upper_bound_seconds: float | None = None, batch_id: int = -1) -> JoinSpec:
    """Validate the parameters against the checkpoint. Empty time columns are read from it: the
    column of each side that carries the watermark (Spark records the delay on it). Bounds left at
    None are read from it too (:func:`time_bounds_from_checkpoint`)."""
    operator = find_join_operator(ckpt, operator_id)
    for name, value in (("lower_bound_seconds", lower_bound_seconds),
                        ("upper_bound_seconds", upper_bound_seconds)):
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                  or not math.isfinite(value)):
            raise RunbookError(f"{name}={value!r} is not a number of seconds (or None: read it "
                               "from the checkpoint)")
    if (lower_bound_seconds is not None and upper_bound_seconds is not None
            and lower_bound_seconds + upper_bound_seconds < 0):
        raise RunbookError(f"the time condition is empty: -lower_bound_seconds "
                           f"({-lower_bound_seconds:g}) is above upper_bound_seconds "
                           f"({upper_bound_seconds:g})")
    batch = ckpt.resolve_batch(batch_id, operator.operator_id)
    reason = unreadable_reason(ckpt, operator, batch)
    if reason:
        raise RunbookError(reason)
    samples = _side_samples(ckpt, operator, batch)
    schemas = {side: schema for side, (schema, _) in samples.items()}
    key_schema = schemas["left"]["key"].dataType
    fields = tuple(f.name for f in key_schema.fields if f.name != "index")
    types = tuple(key_schema[f].dataType for f in fields)
    left = _resolve_side("left", schemas["left"]["value"].dataType, left_time_column)
    right = _resolve_side("right", schemas["right"]["value"].dataType, right_time_column)
    names = _key_names(samples["left"][1], fields, left.value_columns)
    spec = JoinSpec(operator.operator_id, fields, types, names, left, right,
                    float(lower_bound_seconds or 0.0), float(upper_bound_seconds or 0.0))
    if lower_bound_seconds is not None and upper_bound_seconds is not None:
        return spec
    bounds = time_bounds_from_checkpoint(ckpt, spec, batch)
    lower = bounds.lower if lower_bound_seconds is None else float(lower_bound_seconds)
    upper = bounds.upper if upper_bound_seconds is None else float(upper_bound_seconds)
    return dataclasses.replace(spec, lower_bound_seconds=lower, upper_bound_seconds=upper,
                               bounds=bounds)


def time_column_refusal(ckpt: Checkpoint, operator_id: int = -1, right_time_column: str = "",
                        lower_bound_seconds: float | None = None,
                        upper_bound_seconds: float | None = None, batch_id: int = -1) -> str:
    """The one line a left time column the state does not hold gets (shown, not raised): it
    names the columns that are there."""
    try:
        resolve_join(ckpt, operator_id, NO_SUCH_COLUMN, right_time_column, lower_bound_seconds,
                     upper_bound_seconds, batch_id)
    except RunbookError as error:
        return f"RunbookError: {error}"
    return f"resolved: the state holds a column {NO_SUCH_COLUMN!r}"


def time_bounds_from_checkpoint(ckpt: Checkpoint, spec: JoinSpec, batch: int) -> TimeBounds:
    """Read the time bounds of the join condition from the watermark's evictions (Spark does not
    store the condition itself): for each side, the rows of the state of ``batch`` (not evicted
    by its watermark) and the rows removed in each earlier batch (evicted by that batch's
    watermark). Both come from the keys' history (:func:`key_history`), which the classification
    then reuses. One-line RunbookError when they cannot tell."""
    from pyspark.sql import functions as F
    method = history_method(ckpt, spec.operator_id)
    start, _ = ckpt.retained_batch_range(spec.operator_id)
    history = key_history(ckpt, spec, batch, method, start)

    # One pass over the history, both sides: per side and batch that removed rows, the latest
    # time removed (batch null: rows not removed), and the earliest time kept.
    def side(p):
        removed = ~F.col(f"{p}_present") & F.col(f"{p}_seen")
        return F.struct(F.lit(p == "l").alias("is_left"),
                        F.when(removed, F.col(f"{p}_gone")).alias("batch"),
                        F.when(removed, F.col(f"{p}_tmax")).alias("t"),
                        F.col(f"{p}_tmin_now").alias("kept"))
    with spark_errors("reading the join's evictions to find its time bounds"):
        groups = (history.select(F.inline(F.array(side("l"), side("r"))))
                  .groupBy("is_left", "batch").agg(F.max("t").alias("t"),
                                                   F.min("kept").alias("kept")).collect())
    kept = {is_left: min((r["kept"] for r in groups
                          if r["is_left"] == is_left and r["kept"] is not None), default=None)
            for is_left in (True, False)}
    evicted = [r for r in groups if r["batch"] is not None]
    watermark_now = ckpt.offsets(batch).watermark_ms
    watermarks = {b: _watermark(ckpt, b) for b in {r["batch"] for r in evicted}}
    found = {}
    for is_left, name, param in ((True, "lower", "lower_bound_seconds"),
                                 (False, "upper", "upper_bound_seconds")):
        at_least = watermark_now - kept[is_left] if kept.get(is_left) is not None else None
        below = [watermarks[r["batch"]] - r["t"] for r in evicted
                 if bool(r["is_left"]) == is_left and r["t"] is not None
                 and watermarks[r["batch"]] is not None]
        side = "left" if is_left else "right"
        if at_least is None or not below:
            raise RunbookError(
                f"the checkpoint cannot tell the join's {name} bound yet: it needs {side} rows "
                f"the watermark evicted and {side} rows still in the state of batch {batch}; "
                f"pass {param} (copy it from the query's join condition)")
        if not at_least < min(below):
            raise RunbookError(
                f"the {side} rows' evictions do not fit a time-range condition ({side} rows kept "
                f"{at_least / 1000:g} s behind the watermark, evicted {min(below) / 1000:g} s "
                f"behind): pass {param} (copy it from the query's join condition)")
        found[name] = (at_least / 1000, min(below) / 1000)
    return TimeBounds(found["lower"][0], found["lower"][1], found["upper"][0], found["upper"][1],
                      batch)


def _watermark(ckpt: Checkpoint, batch: int) -> int | None:
    try:
        return ckpt.offsets(batch).watermark_ms
    except RunbookError:
        return None


def _key_names(sample: list, fields: tuple, columns: tuple) -> tuple:
    """Name each key field after the left value column that equals it in a sample of rows (the
    state key only says field0, field1, ...); None where no single column does."""
    if not sample:
        return tuple([None] * len(fields))
    names = []
    for f in fields:
        candidates = [c for c in columns if all(r["value"][c] == r["key"][f] for r in sample)]
        names.append(candidates[0] if len(candidates) == 1 else None)
    return tuple(names)
