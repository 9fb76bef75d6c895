"""Growth and projection: rows per measured unit over the retained batches, and rows and memory
some batches ahead at the recent growth rate."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import require
from state_runbooks.core import growth as state_growth
from state_runbooks.core.growth import least_squares_slope

from .measurement import CheckpointMeasurement, StoreMeasurement, measured_totals


def growth(ckpt, measured: CheckpointMeasurement):
    """Rows per measured unit over the retained batches (``state_growth.growth``), reusing
    the batches the measurement counted; an empty table when no unit could be measured."""
    import pandas as pd

    if not measured.stores:
        return pd.DataFrame()
    return state_growth.growth(ckpt, reports=[m.report for m in measured.stores]
                               + measured.unreadable, known_rows=measured.earlier_rows)


@dataclass
class Projection:
    horizon_batches: int
    last_batch: int
    rows_now: int
    growth_per_batch: float  # rows per batch, over the last (up to) 3 sampled batches
    rows: int  # projected at last_batch + horizon_batches
    heap_bytes: float
    reported_bytes: float

    def summary(self) -> dict:
        return {"horizon_batches": self.horizon_batches, "last_batch": self.last_batch,
                "rows_now": self.rows_now, "growth_rows_per_batch": round(self.growth_per_batch, 1),
                "rows": self.rows, "heap_bytes": round(self.heap_bytes),
                "memory_bytes": round(self.reported_bytes)}


def growth_rate(table, points: int = 3) -> float:
    """Rows per batch: least-squares slope of the total rows over the last ``points`` samples."""
    totals = table.sum(axis=1)
    return least_squares_slope(totals.index[-points:], totals.values[-points:])


def project(table, measurements: list[StoreMeasurement], horizon_batches: int) -> Projection:
    """Rows and memory ``horizon_batches`` ahead, at the recent growth rate (linear). A state the
    watermark bounds levels off: its recent rate is 0 and the projection stays where it is."""
    require(isinstance(horizon_batches, int) and not isinstance(horizon_batches, bool)
           and horizon_batches >= 0,
           f"horizon_batches={horizon_batches!r} is not valid: pass how many batches ahead to "
           "project, 0 or more")
    total = measured_totals(measurements)
    if table.empty:  # no store could be measured
        return Projection(horizon_batches, -1, 0, 0.0, 0, 0.0, 0.0)
    rows_now = int(table.sum(axis=1).iloc[-1])
    rate = growth_rate(table)
    rows = max(0, round(rows_now + rate * horizon_batches))
    scale = rows / total.rows if total.rows else 0.0
    return Projection(horizon_batches, int(table.index[-1]), rows_now, rate, rows,
                      total.heap_bytes * scale, total.reported_bytes * scale)
