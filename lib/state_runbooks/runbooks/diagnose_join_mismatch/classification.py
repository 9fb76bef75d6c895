"""The root cause of each join key: the categories (``CATEGORIES``), decided for every key at once
by Spark from its figures (``classify``), with the pair check where min and max do not decide.
"""
from __future__ import annotations

from state_runbooks.common.errors import spark_errors

from .history import _aggregate
from .pairs import PAIR_CHECKED, _disjoint, _undecided, _with_pair_checks
from .spec import JoinSpec

# Root causes, in the order they are shown (``_with_category`` decides them).
CATEGORIES = {
    "joined": "a row of the key is marked matched: the join emitted it",
    "waiting_for_right": "only the left side reached the state, and it is still there",
    "waiting_for_left": "only the right side reached the state, and it is still there",
    "outside_time_bounds": "both sides reached the state, but no pair satisfies the time condition",
    "evicted_by_watermark": "one side waited, the watermark removed it before a match arrived",
    "unmatched_within_bounds": "both sides were in the state together and a pair satisfies the "
                               "time bounds given, yet Spark did not match them",
    "never_seen": "the key never reached either side's state in the retained batches",
}
UNDECIDED = "undecided"  # min and max of the event times left the time condition open


def _with_category(agg, spec: JoinSpec, batch: int):
    """The category of each key (see ``CATEGORIES``), decided in this order (``UNDECIDED`` for the
    keys that need :func:`_with_pair_checks` first)."""
    from pyspark.sql import functions as F
    for p in ("l", "r"):  # removed: seen, not there now: the batch whose watermark removed it
        agg = agg.withColumn(f"{p}_removed", F.when(~F.col(f"{p}_present") & F.col(f"{p}_seen"),
                                                    F.col(f"{p}_gone")))
    l_seen, r_seen = F.col("l_seen"), F.col("r_seen")
    both = l_seen & r_seen
    # Keys min and max cannot decide: null until _with_pair_checks has checked them pair by pair.
    checked = F.col(PAIR_CHECKED) if PAIR_CHECKED in agg.columns else F.lit(None)
    pair_fits = F.when(_undecided(spec), checked).otherwise(~_disjoint(spec))
    never = F.lit(batch + 1)
    together = ((F.coalesce("l_removed", never) > F.coalesce("r_first", never))
                & (F.coalesce("r_removed", never) > F.coalesce("l_first", never)))
    matched = F.coalesce("l_matched", F.lit(False)) | F.coalesce("r_matched", F.lit(False))
    category = (F.when(matched, "joined")
                .when(~l_seen & ~r_seen, "never_seen")
                .when(both & pair_fits.isNull(), UNDECIDED)
                .when(both & ~pair_fits, "outside_time_bounds")
                .when(both & together, "unmatched_within_bounds")
                .when(both, "evicted_by_watermark")
                .when(F.col("l_present"), "waiting_for_right")
                .when(F.col("r_present"), "waiting_for_left")
                .otherwise("evicted_by_watermark"))
    return agg.withColumn("category", category)


def classify(rows, spec: JoinSpec, batch: int, method: str, action: str = "classifying"):
    """``(per_key, counts)`` of any ``rows`` in the shape of ``history_rows``: one row per
    key with its evidence columns and category, and the number of keys per category."""
    agg = _aggregate(rows, spec, batch, method)
    return _classified(agg, spec, batch, action,
                       lambda: _with_pair_checks(rows, agg, spec))


def _classified(agg, spec: JoinSpec, batch: int, action: str, with_pair_checks):
    """Categories and their counts; where min and max left some keys undecided, again on
    ``with_pair_checks()`` (the same keys, those checked pair by pair)."""
    per_key = _with_category(agg, spec, batch)
    with spark_errors(action):
        counts = {r["category"]: int(r["count"])
                  for r in per_key.groupBy("category").count().collect()}
    if counts.get(UNDECIDED):
        return _classified(with_pair_checks(), spec, batch, action, None)
    return per_key, {c: counts.get(c, 0) for c in CATEGORIES}
