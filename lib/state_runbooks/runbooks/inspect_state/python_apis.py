"""PySpark's own stateful APIs, and their state as Spark's reader shows it.

PySpark has no ``mapGroupsWithState`` or ``flatMapGroupsWithState`` (Scala and Java only). Its
counterparts are ``applyInPandasWithState`` (one state row per key, with a timeout) and
``transformWithStateInPandas`` / ``transformWithState`` (named state variables, TTL, timers). Each
keeps its expiry somewhere else, and none in a column called ``expirationMs``; and what the state
costs in memory is Spark's own report (``memoryUsedBytes``), not the sum of any state column. Both
are shown on small demo checkpoints written here by real queries.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import full_error_text, import_failure_on_workers
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import state_units
from state_runbooks.core.state_reader import read_unit
from state_runbooks.core.store_scan import inspect_stores

SCALA_ONLY = ("mapGroupsWithState", "flatMapGroupsWithState")
# workload of the demos -> the PySpark API it calls
DEMOS = {"pandas_with_state": "applyInPandasWithState", "transform_with_state": "transformWithState"}
PYTHON_APIS = ("applyInPandasWithState", "transformWithStateInPandas", "transformWithState")


def api_presence() -> dict[str, bool]:
    """Which of these APIs PySpark's ``GroupedData`` has, asked of the installed PySpark."""
    from pyspark.sql import GroupedData
    return {name: hasattr(GroupedData, name) for name in SCALA_ONLY + PYTHON_APIS}


@dataclass
class UnitState:
    label: str
    columns: list[str]  # the reader's columns, a struct's fields in braces
    expiry_rule: str
    expiry_column: str | None
    rows: int
    row_bytes: int  # key and value bytes as stored (UnsafeRow)


@dataclass
class PythonStateDemo:
    workload: str
    api: str
    units: list[UnitState]
    memory_used_bytes: int | None  # Spark's own figure for the operator, from the last progress
    rows_total: int | None
    not_run: str = ""  # why the demo could not run here (Spark's Python workers lack a module)


def python_state_demos(spark, provider: str = "rocksdb") -> list[PythonStateDemo]:
    """Each Python API's demo query run for 3 batches, its state read back unit by unit. A demo
    whose Python functions cannot run on Spark's workers here (pandas, pyarrow or protobuf
    missing there: a Spark Connect server started with another Python) says so, and the others
    still run."""
    from state_runbooks.demos.checkpoints import build_demo_checkpoint

    out = []
    for workload, api in DEMOS.items():
        try:
            run = build_demo_checkpoint(spark, workload, batches=3, provider=provider,
                                        rows_per_batch=10, partitions=2)
        except Exception as exc:  # noqa: BLE001 - only a worker's missing module is expected
            missing = import_failure_on_workers(full_error_text(exc))
            if missing is None:
                raise
            out.append(PythonStateDemo(workload, api, [], None, None, not_run=missing))
            continue
        ckpt = Checkpoint(spark, run.checkpoint_path)
        schemas = {u.label: read_unit(ckpt, u).schema for u in state_units(ckpt)}
        units = [UnitState(r.label, _columns(schemas[r.label]), r.expiry_rule, r.expiry_column,
                           r.rows, r.key_bytes + r.value_bytes) for r in inspect_stores(ckpt)]
        operators = run.last_state_operators
        out.append(PythonStateDemo(workload, api, units,
                                   operators[0].get("memoryUsedBytes") if operators else None,
                                   operators[0].get("numRowsTotal") if operators else None))
    return out


def _columns(schema) -> list[str]:
    from pyspark.sql import types as T
    return [f"{f.name}{{{', '.join(f.dataType.names)}}}" if isinstance(f.dataType, T.StructType)
            else f.name for f in schema.fields]


def python_state_lines(demos: list[PythonStateDemo], presence: dict[str, bool]) -> list[str]:
    """What the trainee reads: the APIs PySpark has, then each demo's units and figures."""
    has = ", ".join(f"{name} {'yes' if presence[name] else 'no'}" for name in presence)
    lines = [f"PySpark's GroupedData has: {has}."]
    for demo in demos:
        if demo.not_run:
            lines.append(f"{demo.api} (demo {demo.workload}): not run here: {demo.not_run}")
            continue
        row_bytes = sum(u.row_bytes for u in demo.units)
        memory = (f"Spark reports memoryUsedBytes {demo.memory_used_bytes:,} for its "
                  f"{demo.rows_total:,} rows; the rows' own bytes sum to {row_bytes:,}"
                  if demo.memory_used_bytes is not None else "Spark reported no memory figure")
        lines.append(f"{demo.api} (demo {demo.workload}): {memory}.")
        for u in demo.units:
            where = f"{u.expiry_rule} in {u.expiry_column}" if u.expiry_column else u.expiry_rule
            lines.append(f"  {u.label}: {u.rows:,} rows; columns {', '.join(u.columns)}; "
                         f"expiry: {where}")
    named = [u.label for d in demos for u in d.units
             if any("expirationMs" == c.split("{")[0] for c in u.columns)]
    lines.append(f"A column named expirationMs: in {', '.join(named)}." if named else
                 "No unit has a column named expirationMs: each line above says where its "
                 "expiry is.")
    return lines
