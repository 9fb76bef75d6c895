"""Rows per state unit over the retained batches: the growth 02 projects and 03 shows.

Each unit is counted at up to ``max_points`` retained batches, exactly, the cheapest way the
checkpoint allows; the table's ``attrs["methods"]`` says which way each unit was counted:

- RocksDB snapshot key counts (``KEY_COUNTS``): with every snapshot (``<version>.zip``) RocksDB
  records how many keys it holds (``numKeys``, counted by Spark while ``trackTotalNumberOfRows``
  is on, its default; -1 when off). Where every partition of a store has a snapshot of one
  version, the store's rows at that batch are their sum: one small Spark job reads the snapshots'
  metadata and no state is loaded. A production checkpoint keeps a snapshot every
  ``minDeltasForSnapshot`` (10) versions.
- the inspected batch's rows and the change feed's puts and removals (``FEED_COUNTS``): for state
  that only gets keys it does not hold (a deduplication), the newest ``max_points`` batches from
  the rows at the newest one (03's scan) and the feed's line counts: each batch holds the next
  one's rows minus the keys the next one put plus those it removed. One Spark job reads the feed's
  lines of those batches; no state is loaded and no key is shuffled. A young RocksDB checkpoint
  (no snapshot yet: every state read replays its changelogs) is counted this way. Other operators
  replace keys with a put, and the feed's ``change_type`` (``update`` or ``delete``) does not say
  whether a put replaced a key: they need a state read.
- the state at the first batch shown, replayed through the change feed (``CHANGE_FEED``): the
  newest ``max_points`` batches, from the state at the first of them plus the feed's puts and
  deletes (HDFS-backed provider, RocksDB with changelog checkpointing) in one pass: its cost is one
  state read and a file per batch and partition, whatever the retention.
- state reads (``STATE_READS``): the state at each sampled batch.

Counts already known from 03's scan of the inspected batch are reused, and a method whose counts
disagree with that scan is dropped for the next one.
"""
from __future__ import annotations

from functools import reduce

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.spark_settings import OPEN_COST_CONF
from state_runbooks.core.fs.connect import LISTING_CONF
from state_runbooks.session.spark_session import session_conf

from .checkpoint import Checkpoint
from .operators import (
    StateUnit,
    matches_store,
    puts_only_new_keys,
    serves_change_feed,
    state_units,
)
from .state_files import snapshot_metadata
from .state_reader import (
    change_line_counts,
    per_core_tasks,
    read_unit,
    union_over_batches,
)

KEY_COUNTS = "RocksDB snapshot key counts"
FEED_COUNTS = "the inspected batch's rows and the change feed's puts and removals"
CHANGE_FEED = "the state at the first batch shown, replayed through the change feed"
STATE_READS = "state reads"
# Spark's file index: list the given files on the driver (no listing job) and pack many small
# files into each task (a zip's metadata is a few KB; Spark's default open cost is 4 MB a file).
_SMALL_FILES_CONF = {**LISTING_CONF, OPEN_COST_CONF: "0"}


def sample_batches(first: int, last: int, max_points: int) -> list[int]:
    """Up to ``max_points`` batch ids spread evenly over ``first..last``, always with both ends."""
    if max_points < 2 or last - first + 1 <= max_points:
        return list(range(first, last + 1)) if max_points >= 2 else [last]
    step = (last - first) / (max_points - 1)
    return sorted({first + round(i * step) for i in range(max_points)})


def _spread(batches: list[int], max_points: int) -> list[int]:
    """Up to ``max_points`` of ``batches`` (sorted), spread evenly, with both ends."""
    return [batches[i] for i in sample_batches(0, len(batches) - 1, max_points)] if batches else []


def _key_count(data: bytes) -> int:
    """A snapshot's ``numKeys``; -1 when not counted, or when it mixes column families (a count
    of several units, or of a store with internal column families)."""
    try:
        meta = snapshot_metadata(data)
    except Exception:  # noqa: BLE001 - a zip that does not parse gives no count
        return -1
    if meta.get("columnFamilyMapping") or meta.get("numInternalKeys"):
        return -1
    return int(meta.get("numKeys", -1))


def _snapshot_batches(ckpt: Checkpoint, unit: StateUnit, lo: int, hi: int) -> dict[int, list]:
    """batch -> the snapshot zips of that batch's version, one per partition of the unit's store,
    for retained batches where every partition has exactly one."""
    files = ckpt.state_files(unit.operator_id, unit.files_store)
    partitions = {f.partition_id for f in files}
    by_version: dict[int, list] = {}
    for f in files:
        if f.kind == "zip" and lo <= f.batch_id <= hi:
            by_version.setdefault(f.version, []).append(f)
    return {v - 1: zips for v, zips in sorted(by_version.items())
            if len(zips) == len(partitions) == len({z.partition_id for z in zips})}


def _alone_in_folder(ckpt: Checkpoint, unit: StateUnit, units: list[StateUnit]) -> bool:
    return ckpt.provider_kind == "rocksdb" and unit.state_variable is None and not any(
        u is not unit and (u.operator_id, u.files_store) == (unit.operator_id, unit.files_store)
        for u in units)


def _read_key_counts(ckpt: Checkpoint, zips: list) -> dict[str, int]:
    """numKeys of each zip (by path relative to the checkpoint), read in one Spark job."""
    import pandas as pd

    def counts(frames):
        for frame in frames:
            yield pd.DataFrame({"path": frame["path"],
                                "num_keys": [_key_count(bytes(c)) for c in frame["content"]]})

    by_uri = {_past_scheme(ckpt.fs.uri(z.path)): z.path for z in zips}
    with spark_errors("reading the key counts of RocksDB's snapshots"), \
            session_conf(ckpt.spark, _SMALL_FILES_CONF):
        rows = (ckpt.spark.read.format("binaryFile").load([ckpt.fs.uri(z.path) for z in zips])
                .select("path", "content").mapInPandas(counts, "path string, num_keys long")
                .collect())
    return {by_uri[_past_scheme(r["path"])]: int(r["num_keys"]) for r in rows
            if _past_scheme(r["path"]) in by_uri}


def _past_scheme(path: str) -> str:
    """A path without its scheme and leading slashes: Spark reports ``file:/x`` for the
    ``file:///x`` or ``/x`` it was given."""
    head = path.split("/", 1)[0]
    return (path.split(":", 1)[1] if head.endswith(":") or ":" in head else path).lstrip("/")


def _by_key_counts(ckpt: Checkpoint, units: list[StateUnit], all_units: list[StateUnit],
                   known: dict, max_points: int):
    """Every unit's rows from RocksDB's snapshot key counts, at batches where every unit has a
    snapshot in every partition (and at the batches 03's scan counted), in one Spark job; None
    when some unit cannot be counted that way or fewer than two such batches are retained."""
    if max_points < 2 or not all(_alone_in_folder(ckpt, u, all_units) for u in units):
        return None
    snapshots = {}
    for u in units:
        lo, hi = ckpt.retained_batch_range(u.operator_id)
        snapshots[u.label] = _snapshot_batches(ckpt, u, lo, hi)
    scanned = set.intersection(*[{b for (label, b) in known if label == u.label} for u in units])
    common = set.intersection(*[set(s) for s in snapshots.values()])
    picked = _spread(sorted(common - scanned), max_points - len(scanned))
    if len(picked) < 2:
        return None
    # A scanned batch that has snapshots too is read as well, to check numKeys against the scan.
    read = picked + sorted(common & scanned)
    zips = [z for u in units for b in read for z in snapshots[u.label][b]]
    counts = _read_key_counts(ckpt, zips)
    if len(counts) != len(zips) or any(n < 0 for n in counts.values()):
        return None
    rows = {(u.label, b): sum(counts[z.path] for z in snapshots[u.label][b])
            for u in units for b in read}
    if any(known.get(key, n) != n for key, n in rows.items()):
        return None  # numKeys disagrees with a scan: not to be trusted here
    rows.update({(u.label, b): known[(u.label, b)] for u in units for b in scanned})
    return rows


def growth(ckpt: Checkpoint, operator_id: int = -1, store_name: str = "", max_points: int = 12,
           reports: list | None = None, known_rows: dict | None = None):
    """Rows per unit at up to ``max_points`` retained batches, as a pandas DataFrame (index
    ``batch_id``, one column per unit; ``attrs["methods"]``: unit -> how it was counted). Counts
    already known are reused: from ``reports`` (03's ``StoreReport`` of the inspected batch) and
    ``known_rows`` ((unit label, batch) -> rows, counted exactly elsewhere: 02's measurement of
    the batches before); units the reports found unreadable are left out."""
    import pandas as pd

    known = {**(known_rows or {}),
             **{(r.label, r.batch_id): r.rows for r in reports or [] if r.readable}}
    unreadable = {r.label for r in reports or [] if not r.readable}
    all_units = state_units(ckpt, operator_id)
    units = [u for u in all_units
             if matches_store(u, store_name) and u.label not in unreadable]
    if not units:
        raise RunbookError(f"no readable store matches operator {operator_id} and store "
                           f"{store_name!r}")
    counts = _by_key_counts(ckpt, units, all_units, known, max_points)
    if counts is not None:
        methods = {u.label: KEY_COUNTS for u in units}
    else:
        counts = _by_counting_changes(ckpt, units, known, max_points)
        methods = {label: FEED_COUNTS for label, _b in counts}
        rest = [u for u in units if u.label not in methods]
        if rest:
            more, more_methods = _by_reading_state(ckpt, rest, known, unreadable, max_points)
            counts.update(more)
            methods.update(more_methods)
    # A unit whose state was empty at a batch has no row in Spark's count: it stays 0.
    table = pd.Series(counts).unstack(level=0).fillna(0).astype(int).sort_index()
    table.index.name = "batch_id"
    table.columns.name = None
    kept = [u.label for u in units if u.label not in unreadable]
    table = table[kept]
    table.attrs["methods"] = {label: methods[label] for label in kept}
    return table


def rows_back_from_changes(rows_at: dict, changes: dict, batch: int, back: int) -> dict | None:
    """For state that only gets keys it does not hold (``operators.puts_only_new_keys``): the rows
    at each of the ``back`` batches before ``batch``, per key of ``rows_at`` (a unit, or one
    partition of it: its rows at ``batch``), as ``{(key, batch): rows}``. ``changes``: ``(key,
    batch) -> (keys put, keys removed)`` in that batch. A batch holds the next one's rows minus
    the keys the next one put plus those it removed (a key put and removed in one batch, behind
    the watermark that evicts, adds nothing either way). None when a count comes out below zero:
    the feed does not add up as such state's would."""
    found = {}
    for key, rows in rows_at.items():
        for b in range(batch, batch - back, -1):
            put, removed = changes.get((key, b), (0, 0))
            rows = rows - put + removed
            if rows < 0:
                return None
            found[(key, b - 1)] = rows
    return found


def _by_counting_changes(ckpt: Checkpoint, units: list[StateUnit], known: dict,
                         max_points: int) -> dict:
    """(unit label, batch) -> rows at the newest ``max_points`` retained batches of each unit whose
    state only gets new keys and whose rows at the newest batch are known, from the change feed's
    line counts (:func:`rows_back_from_changes`), in one Spark job; units whose counts do not add
    up, or disagree with a count made elsewhere, are left out (counted another way)."""
    from pyspark.sql import functions as F

    spans = {}
    for u in units:
        lo, hi = ckpt.retained_batch_range(u.operator_id)
        if max_points >= 2 and hi > lo and (u.label, hi) in known and puts_only_new_keys(ckpt, u):
            spans[u.label] = (u, max(lo, hi - max_points + 1), hi)
    if not spans:
        return {}
    frames = [change_line_counts(ckpt, u, first + 1, hi) for u, first, hi in spans.values()]
    try:
        with spark_errors("counting the change feed's lines over the retained batches"):
            lines = (reduce(lambda a, b: a.unionByName(b), frames)
                     .groupBy("store", "batch_id", "kind").agg(F.sum("n").alias("n")).collect())
    except RunbookError:
        return {}
    changes: dict = {}
    for r in lines:
        put, removed = changes.get((r["store"], int(r["batch_id"])), (0, 0))
        changes[(r["store"], int(r["batch_id"]))] = (
            (put + int(r["n"]), removed) if r["kind"] == "update" else (put, removed + int(r["n"])))
    out = {}
    for label, (_u, first, hi) in spans.items():
        back = rows_back_from_changes({label: known[(label, hi)]}, changes, hi, hi - first)
        if back is None or any(known.get(k, n) != n for k, n in back.items()):
            continue
        out.update(back)
        out[(label, hi)] = known[(label, hi)]
    return out


def _by_reading_state(ckpt: Checkpoint, units: list[StateUnit], known: dict, unreadable: set,
                      max_points: int) -> tuple[dict, dict]:
    """Rows per (unit, batch) from the change feed (the newest batches: the state at the first
    of them plus the feed's puts and deletes, one pass instead of loading every partition's state
    once per batch) or from the state at each sampled batch,
    in one Spark job. Where a replay cannot be trusted (a key put and deleted in one batch, or a
    count that differs from the inspected batch's scan) the unit is counted again by reading its
    state. Units Spark cannot read are added to ``unreadable``. Returns (counts, methods)."""
    counts: dict = {}
    methods: dict[str, str] = {}
    sampled, frames, replayed = {}, {}, {}
    for u in units:
        lo, hi = ckpt.retained_batch_range(u.operator_id)
        feed = serves_change_feed(ckpt, u)
        # The feed is replayed over the newest max_points batches, not every retained one: its
        # cost is a file per batch and partition, and a production checkpoint retains 100.
        batches = (list(range(max(lo, hi - max_points + 1), hi + 1)) if feed and max_points > 1
                   else sample_batches(lo, hi, max_points))
        sampled[u.label] = batches
        for b in batches:
            counts[(u.label, b)] = known.get((u.label, b), 0)
        to_scan = [b for b in batches if (u.label, b) not in known]
        if len(to_scan) > 1 and feed:
            replayed[u.label] = _replay_presence(ckpt, u, batches[0], batches)
            methods[u.label] = CHANGE_FEED
        else:
            if to_scan:
                frames[u.label] = _state_rows_at(ckpt, u, to_scan)
            methods[u.label] = STATE_READS
    found: dict = {}
    if _count_rows(list(frames.values()) + list(replayed.values()), found):
        found = {}  # some unit does not load or replay: count each alone below
        for label, frame in {**frames, **replayed}.items():
            if _count_rows([frame], found):
                if label in frames:
                    unreadable.add(label)
                else:
                    replayed[label] = None  # recounted from its state below
    redo = {}
    for u in units:
        if u.label not in replayed:
            continue
        mixed = any(k[0] == _MIXED + u.label for k in found)
        differs = any(found.get((u.label, b), 0) != rows
                      for (label, b), rows in known.items() if label == u.label)
        if replayed[u.label] is None or mixed or differs:
            redo[u.label] = _state_rows_at(ckpt, u, [b for b in sampled[u.label]
                                                    if (u.label, b) not in known])
            methods[u.label] = STATE_READS
    if redo and _count_rows(list(redo.values()), found):
        for label, frame in redo.items():
            if _count_rows([frame], found):
                unreadable.add(label)
    for (label, b), rows in found.items():
        if (label, b) in counts and (label, b) not in known:
            counts[(label, b)] = rows
    return counts, methods


def method_lines(table) -> list[str]:
    """How each unit of a :func:`growth` table was counted, one line per method."""
    by_method: dict[str, list[str]] = {}
    for label, method in table.attrs.get("methods", {}).items():
        by_method.setdefault(method, []).append(label)
    return [f"counted by {method} (exact): {', '.join(labels)}"
            + (" (the newest batches)" if method in (CHANGE_FEED, FEED_COUNTS) else "")
            for method, labels in by_method.items()]


_MIXED = "mixed:"  # replay rows of keys both put and deleted within one batch: order unknown


def _state_rows_at(ckpt: Checkpoint, unit: StateUnit, batches: list[int]):
    """One row per state row of ``unit`` at each of ``batches`` (``batch_id``, ``store``)."""
    from pyspark.sql import functions as F
    return per_core_tasks(ckpt.spark, union_over_batches(
        ckpt, unit.operator_id, unit.store_name, batches, [F.lit(unit.label).alias("store")],
        unit.state_variable))


def _replay_presence(ckpt: Checkpoint, unit: StateUnit, first: int, batches: list[int]):
    """One row (``batch_id``, ``store``) per key present at each of ``batches``: the state at
    ``first`` (none to read when ``first`` is batch 0), then each key's puts and deletes from
    the change feed, each one holding until the key's next change. Keys both put and deleted in
    one batch come out under ``_MIXED + label`` (the feed does not order them)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from .state_reader import read_state_changes

    last = batches[-1]
    start = first if first == 0 else first + 1
    events = read_state_changes(ckpt, unit.operator_id, unit.store_name, start, last).select(
        "partition_id", "key", "batch_id",
        (F.col("change_type") == "update").cast("int").alias("put"))
    if start > first:
        events = read_unit(ckpt, unit, first).select(
            "partition_id", "key", F.lit(first).cast("long").alias("batch_id"),
            F.lit(1).alias("put")).unionByName(events)
    per_batch = per_core_tasks(ckpt.spark, events).groupBy("partition_id", "key", "batch_id").agg(
        F.max("put").alias("put"), F.min("put").alias("put_min"))
    until = F.lead("batch_id").over(Window.partitionBy("partition_id", "key").orderBy("batch_id"))
    spans = per_batch.select("batch_id", "put", "put_min",
                             F.coalesce(until, F.lit(last + 1)).alias("until"))
    samples = F.array(*[F.lit(b).cast("long") for b in batches])
    present = spans.where("put = 1").select(
        F.when(F.col("put_min") == 0, F.lit(_MIXED + unit.label)).otherwise(F.lit(unit.label))
        .alias("store"),
        F.explode(F.filter(samples, lambda b: (b >= F.col("batch_id")) & (b < F.col("until"))))
        .alias("batch_id"))
    return present.select("batch_id", "store")


def _count_rows(frames: list, counts: dict) -> bool:
    """Count rows per (batch, unit) of ``frames`` into ``counts``; True when Spark failed."""
    if not frames:
        return False
    combined = reduce(lambda a, b: a.unionByName(b), frames)
    try:
        with spark_errors("counting state rows over the retained batches"):
            rows = combined.groupBy("batch_id", "store").count().collect()
    except RunbookError:
        return True
    for row in rows:
        counts[(row["store"], int(row["batch_id"]))] = int(row["count"])
    return False


MIN_TREND_POINTS = 3  # fewer samples cannot tell a rise from noise
LEVEL_POINTS = 3  # a rise held at this many samples, its last among them, has levelled off


def is_rising(rows, min_points: int = MIN_TREND_POINTS) -> bool:
    """The one rule for "the state is still growing", in every runbook: over the samples (in
    batch order) it never fell and it ended higher than it started. No-data and quiet batches
    leave the rows flat, which does not break a rise; a rise held level at its last samples is
    told apart by :func:`level_from`. A caller that
    already required a longer history may judge its later part on fewer ``min_points``."""
    rows = [int(r) for r in rows]
    return (len(rows) >= min_points and rows[-1] > rows[0]
            and all(b >= a for a, b in zip(rows, rows[1:])))


def level_from(rows, batches, min_points: int = LEVEL_POINTS):
    """The batch from which ``rows`` (sampled at ``batches``, in order) have held their last
    value, when they held it at ``min_points`` samples or more: a rise that has levelled off
    (state that each batch adds to and the watermark evicts from alike). None otherwise."""
    rows = [int(r) for r in rows]
    since = len(rows) - 1
    while since > 0 and rows[since - 1] == rows[-1]:
        since -= 1
    return int(batches[since]) if len(rows) - since >= min_points else None


def growth_verdicts(table) -> dict[str, dict]:
    """Per store of a growth table: first and last row counts, peak, whether it only grew
    (:func:`is_rising`) and, for one that did, the batch from which it held level
    (:func:`level_from`; None: still rising)."""
    out = {}
    batches = [int(b) for b in table.index]
    for store in table.columns:
        series = [int(v) for v in table[store].tolist()]
        rising = is_rising(series)
        out[store] = {"first": series[0], "last": series[-1], "peak": max(series),
                      "only_grew": rising, "points": len(series),
                      "level_from": level_from(series, batches) if rising else None}
    return out


def least_squares_slope(xs, ys) -> float:
    """Least-squares slope of ``ys`` over ``xs`` (0 with fewer than two points or constant xs)."""
    xs = [float(x) for x in xs]
    ys = [float(y) for y in ys]
    if len(xs) < 2:
        return 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0
