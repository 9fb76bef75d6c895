"""The time condition on a key's pairs of event times: which keys min and max cannot decide, the
pair check Spark runs for those, and the pair closest to the bounds (pure Python).
"""
from __future__ import annotations

from .spec import JoinSpec

PAIR_CHECKED = "pair_fits"  # the column _with_pair_checks adds: some pair fits the condition


def _bounds_ms(spec: JoinSpec) -> tuple[int, int]:
    return int(round(spec.lower_bound_seconds * 1000)), int(round(spec.upper_bound_seconds * 1000))


def _disjoint(spec: JoinSpec):
    """Left time - right time over all of a key's pairs lies in [l_tmin - r_tmax, l_tmax - r_tmin];
    the condition allows [-lower, +upper]: when the two do not overlap, no pair fits."""
    from pyspark.sql import functions as F
    lower_ms, upper_ms = _bounds_ms(spec)
    return (((F.col("l_tmax") - F.col("r_tmin")) < -lower_ms)
            | ((F.col("l_tmin") - F.col("r_tmax")) > upper_ms))


def _undecided(spec: JoinSpec):
    """Keys seen on both sides whose min and max leave the time condition open: the ranges
    overlap and a side has several event times (with one time per side the gap is exact)."""
    from pyspark.sql import functions as F
    single = (F.col("l_tmin") == F.col("l_tmax")) & (F.col("r_tmin") == F.col("r_tmax"))
    return F.col("l_seen") & F.col("r_seen") & ~single & ~_disjoint(spec)


def _with_pair_checks(rows, agg, spec: JoinSpec):
    """``agg`` with ``PAIR_CHECKED``: for each key :func:`_undecided` picks, whether some pair of
    its left and right event times satisfies the time condition (null for the others). A join of
    those keys' distinct times, side against side, within the bounds."""
    from pyspark.sql import functions as F
    keys = [f"k_{f}" for f in spec.key_fields]
    lower_ms, upper_ms = _bounds_ms(spec)
    open_keys = agg.where(_undecided(spec)).select(*keys)
    times = (rows.where(~F.col("is_delete") & F.col("t").isNotNull())
             .select(*keys, "is_left", "t").distinct().join(open_keys, keys, "left_semi"))
    left = times.where(F.col("is_left")).select(*keys, F.col("t").alias("lt"))
    right = times.where(~F.col("is_left")).select(*keys, F.col("t").alias("rt"))
    fitting = (left.join(right, keys).where((F.col("lt") >= F.col("rt") - lower_ms)
                                            & (F.col("lt") <= F.col("rt") + upper_ms))
               .select(*keys).distinct().withColumn("_fits", F.lit(True)))
    return (agg.join(fitting, keys, "left")
            .withColumn(PAIR_CHECKED, F.when(_undecided(spec), F.coalesce("_fits", F.lit(False))))
            .drop("_fits"))


# -- pure helpers (no Spark) ----------------------------------------------------------------------
def closest_pair(left_ms: list[int], right_ms: list[int], lower: float, upper: float
                 ) -> tuple[float, float]:
    """The pair whose gap (left time - right time, seconds) is closest to the allowed range
    ``[-lower, +upper]``: ``(gap, seconds beyond the nearest bound)``; 0 beyond means it fits."""
    best = None
    for lt in left_ms:
        for rt in right_ms:
            gap = (lt - rt) / 1000
            beyond = max(-lower - gap, gap - upper, 0.0)
            if best is None or (beyond, abs(gap)) < (best[1], abs(best[0])):
                best = (gap, beyond)
    return (round(best[0], 3), round(best[1], 3)) if best else (None, None)
