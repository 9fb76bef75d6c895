"""The whole trace: each unit of the operators asked for (a store, a join store, a state
variable, timers) where ``key_where`` resolves on its columns, placed, read batch by batch and
judged."""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import StateUnit, matches_store, state_units
from state_runbooks.core.state_reader import load_unit

from .condition import check_key_where, fixed_columns
from .history import UnitTrace, check_range, trace_unit
from .locate import Placement, place
from .verdict import KeyStatus, overall, unit_status


@dataclass
class Trace:
    key_where: str
    traces: list[UnitTrace] = field(default_factory=list)
    skipped: dict = field(default_factory=dict)  # unit label -> why not traced
    statuses: list[KeyStatus] = field(default_factory=list)

    @property
    def status(self) -> KeyStatus:
        return overall(self.statuses)

    @property
    def partitions_read(self) -> int:
        return max((t.partitions_read for t in self.traces), default=0)

    def disagreements(self) -> list[str]:
        """Units whose rows the reader shows in another partition than Spark's rule gives."""
        return [f"{t.label}: Spark's rule gives partition {t.placement.partition_id}, the reader "
                f"shows {sorted(t.seen_partitions)}" for t in self.traces
                if t.placement.partition_id is not None and t.seen_partitions
                and t.seen_partitions != {t.placement.partition_id}]


def _resolves(df, key_where: str) -> str | None:
    """None when ``key_where`` resolves on the unit's columns, else why not (in one line)."""
    try:
        df.where(key_where).schema
    except Exception as exc:  # noqa: BLE001 - AnalysisException or ParseException
        from state_runbooks.common.errors import first_line
        return first_line(exc).split(" SQLSTATE")[0]
    return None


def _trace_retained(ckpt: Checkpoint, unit: StateUnit, key_where: str, placement: Placement,
                    batches: tuple, asked: tuple) -> UnitTrace:
    """The unit traced over ``batches``; once more over the range kept now where a running query
    cleaned up the first batches of it while they were read (Spark's reader then finds no commit
    or state file for them)."""
    try:
        return trace_unit(ckpt, unit, key_where, placement, *batches)
    except RunbookError:
        now = check_range(ckpt, unit, *asked)
        if now[0] == batches[0]:
            raise
        return trace_unit(ckpt, unit, key_where, placement, *now)


def trace_key(ckpt: Checkpoint, key_where: str, operator_id: int = -1, store_name: str = "",
              from_batch: int = -1, to_batch: int = -1) -> Trace:
    key_where = check_key_where(key_where)
    fixed = fixed_columns(key_where)
    units = [u for u in state_units(ckpt, operator_id) if matches_store(u, store_name)]
    if not units:
        raise RunbookError(f"no store {store_name!r} in the operators asked for: pass one of "
                           + ", ".join(sorted({u.state_variable or u.store_name
                                               for u in state_units(ckpt, operator_id)})))
    out = Trace(key_where)
    for unit in units:
        first, last = check_range(ckpt, unit, from_batch, to_batch)
        with spark_errors(f"reading the schema of {unit.label}"):
            df = load_unit(ckpt, unit, {"batchId": last})
        why = _resolves(df, key_where)
        if why:
            out.skipped[unit.label] = f"key_where does not resolve on its columns: {why}"
            continue
        placement = (place(ckpt, unit, df.schema["key"].dataType, fixed, key_where)
                     if "key" in df.columns else Placement(None, unit.num_partitions, "no key"))
        trace = _trace_retained(ckpt, unit, key_where, placement, (first, last),
                                (from_batch, to_batch))
        out.traces.append(trace)
        out.statuses.append(unit_status(trace))
    if not out.traces:
        raise RunbookError("key_where resolves on no unit asked for ("
                           + "; ".join(f"{k}: {v}" for k, v in out.skipped.items())[:300]
                           + "): name the key columns as Spark's reader shows them (03 lists "
                           "them)")
    return out
