"""Measuring a checkpoint for the memory model: each unit's rows and bytes as the core's store scan
reports them, what the newest batch put and removed (the state change feed) or, without one, what
the row counts show, and from that what the HDFS-backed provider holds in memory.

The row counts of the two batches before come from the change feed alone where the operator only
ever puts keys its state does not hold (a deduplication: Spark looks the key up and puts it only
when absent, and removes only keys it holds): rows before = rows now - keys put + keys removed,
exact, and no state is loaded again. Other operators with a change feed: the state two batches
back counted per partition, and the keys the batch between changed (broadcast to that scan) tell
which of its rows that batch kept; no key of the state is shuffled. Without a feed: read at each.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

from state_runbooks.common.errors import spark_errors
from state_runbooks.common.formatting import format_bytes
from state_runbooks.common.spark_settings import (
    MAX_VERSIONS_IN_MEMORY_CONF,
    ROW_CHECKSUM_CONF,
)
from state_runbooks.core.growth import rows_back_from_changes
from state_runbooks.core.operators import (
    operator_model,
    puts_only_new_keys,
    serves_change_feed,
)
from state_runbooks.core.state_reader import (
    change_line_counts,
    per_core_tasks,
    read_state,
    read_state_changes,
    union_over_batches,
    unsafe_row_size_sql,
)
from state_runbooks.core.store_scan import StoreReport, inspect_stores

from .jvm_objects import COMPRESSED_OOPS, JvmLayout, prefix_map_fixed_bytes
from .memory_model import (
    DEFAULT_VERSIONS_IN_MEMORY,
    MemoryEstimate,
    PartitionVersions,
    estimate_partition,
    partition_versions,
    prefix_index_bytes,
)
from .version_churn import version_churn

# The scan's figures of a measured unit are its report's own: ``m.rows`` is ``m.report.rows``.
REPORTED_FIGURES = ("operator_id", "operator_name", "store_name", "num_partitions", "batch_id",
                    "rows", "key_bytes", "value_bytes", "rows_per_partition", "disk",
                    "payload_bytes_per_partition", "label", "state_variable")
# Operator families whose store the HDFS-backed provider keeps with a second map per version (each
# session key -> the set of its sessions, for prefix scans): measured apart (``_prefix_index``).
PREFIX_INDEX_FAMILIES = ("session_window",)
# Whether the rows of the batches before come from the change feed where it can give them exactly;
# False: always read from the state at those batches (the tests compare both ways).
EARLIER_ROWS_FROM_CHANGES = True


@dataclass
class StoreMeasurement:
    """One unit at one batch: its store scan report (rows and bytes as stored, files on disk)
    and the HDFS-backed provider's in-memory estimate for those rows. The report's figures read
    as attributes of the measurement (``m.rows``, ``m.disk``, ...)."""
    report: StoreReport
    # "change feed" (the batch's own puts and removes), "state at both batches" (compared key by
    # key) or "row counts" (the batch before is no longer retained)
    churn_source: str
    partitions: list[PartitionVersions] = field(default_factory=list)
    estimate: MemoryEstimate = field(default_factory=MemoryEstimate)
    # Where the rows of the batches before come from: "state" (read at each), "change feed" alone
    # (an operator that only puts new keys), "state and change feed" (two back, replayed)
    earlier_rows_source: str = "state"
    # The model leaves out part of what the provider holds (see ``PREFIX_INDEX_FAMILIES``): the
    # estimate is a lower bound.
    lower_bound: bool = False

    def __getattr__(self, name: str):
        if name in REPORTED_FIGURES:
            return getattr(self.report, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def payload_bytes(self) -> int:
        return self.key_bytes + self.value_bytes


@dataclass
class CheckpointMeasurement:
    """Every unit of a checkpoint (store, join store, state variable) at one batch: measured, or
    the report of Spark's reader refusing it."""
    batch_id: int
    stores: list[StoreMeasurement]  # one per unit Spark's reader reads
    unreadable: list[StoreReport]  # reader_error set
    # (unit label, batch) -> the unit's rows at each batch before that was counted (exactly)
    earlier_rows: dict = field(default_factory=dict)

    def lines(self) -> list[str]:
        """What could not be measured, one line per unit (nothing when every unit was)."""
        return [f"{r.label} ({r.operator_name}): not measured, Spark's statestore reader "
                f"refused it ({r.reader_error_class or r.reader_error}); its files: "
                f"{format_bytes(r.disk.get('retained_bytes', 0))} retained on disk."
                for r in self.unreadable]


def measure_stores(ckpt, batch_id: int = -1, restarted_each_batch: bool = False,
                   versions_in_memory: int | None = None, layout: JvmLayout = COMPRESSED_OOPS,
                   operator_id: int = -1) -> list[StoreMeasurement]:
    """:func:`measure_checkpoint`'s measured stores."""
    return measure_checkpoint(ckpt, batch_id, restarted_each_batch, versions_in_memory, layout,
                              operator_id).stores


def measure_checkpoint(ckpt, batch_id: int = -1, restarted_each_batch: bool = False,
                       versions_in_memory: int | None = None,
                       layout: JvmLayout = COMPRESSED_OOPS,
                       operator_id: int = -1) -> CheckpointMeasurement:
    """Rows, bytes and the HDFS-backed in-memory estimate of every store at a batch.

    Rows and bytes come from one scan per unit (``store_scan.inspect_stores``). What the older kept
    version holds comes from the batch's own changes (the state change feed: keys put and removed)
    and the row counts of the two batches before, in one Spark job (from the feed alone, or the
    state two batches back replayed through it, where that is exact; else read). Units are the
    operator model's (a join in state format 3 by side, transformWithState by variable); a unit
    Spark's reader refuses is listed in ``unreadable`` instead of failing the measurement.
    """
    batch = ckpt.resolve_batch(batch_id, operator_id)
    lo, _hi = ckpt.retained_batch_range(operator_id)
    versions = (versions_in_memory if versions_in_memory is not None
                else int(ckpt.spark.conf.get(MAX_VERSIONS_IN_MEMORY_CONF, str(DEFAULT_VERSIONS_IN_MEMORY))))
    checksum = str(ckpt.pinned_conf.get(ROW_CHECKSUM_CONF, "false")).lower() == "true"
    inspected = inspect_stores(ckpt, batch, operator_id, top_keys=0)
    reports = [r for r in inspected if r.readable]
    unreadable = [r for r in inspected if not r.readable]

    earlier = [b for b in (batch - 1, batch - 2) if b >= lo]
    snapshots = {r.label: _snapshot_versions(ckpt, r, batch) if restarted_each_batch else {}
                 for r in reports}
    from_feed = {r.label for r in reports if EARLIER_ROWS_FROM_CHANGES and puts_only_new_keys(ckpt, r)}
    # Elsewhere with a change feed and both batches before retained: the state two batches back,
    # replayed through the feed of the batch between (one state read instead of two).
    replayed = {r.label for r in reports if EARLIER_ROWS_FROM_CHANGES and len(earlier) == 2
                and r.label not in from_feed and serves_change_feed(ckpt, r)}
    wanted = {r.label: (set() if r.label in from_feed | replayed else set(earlier))
              | {v - 1 for v in snapshots[r.label].values() if lo <= v - 1 < batch - 1}
              for r in reports}
    counts, changes, fed = (_history(ckpt, reports, wanted, max(lo, batch - 1), batch,
                                     replay_from=batch - 2 if replayed else None,
                                     replayed=replayed, counted_by_line=from_feed)
                            if reports else ({}, {}, set()))
    derived = [r for r in reports if r.label in from_feed]
    unsure = [r for r in reports if r.label in replayed
              and any(k[0] == _MIXED + r.label for k in counts)]
    recount = not _rows_before_from_changes(derived, earlier, batch, changes, counts)
    if recount:
        # A count below zero: the feed does not add up as a deduplication's would. Read the
        # rows, and count its changes again key by key.
        from_feed, unsure = set(), unsure + derived
    labels = {r.label for r in unsure}
    if unsure:  # (or a key both put and removed in the batch replayed: order unknown)
        counts = {k: v for k, v in counts.items() if not (k[0] in labels and k[1] in earlier)}
        more, more_changes, _ = _history(ckpt, unsure, {r.label: set(earlier) for r in unsure},
                                         max(lo, batch - 1), batch, with_changes=recount)
        counts.update(more)
        changes.update(more_changes)
    # Units without a change feed: what the batch changed, from its state and the one before.
    unfed = [r for r in reports if r.label not in fed]
    compared = version_churn(ckpt, unfed, batch) if unfed and batch - 1 in earlier else None
    earlier_rows = {(r.label, b): sum(n for (label, b2, _p), n in counts.items()
                                      if label == r.label and b2 == b)
                    for r in reports for b in earlier}

    out = []
    for report in reports:
        parts = []
        key_avg = report.key_bytes / report.rows if report.rows else 0.0
        value_avg = report.value_bytes / report.rows if report.rows else 0.0
        # A partition with no state file never had a store instance (a global limit keeps its
        # state in partition 0 only): it holds no memory.
        present = {f.partition_id for f in ckpt.state_files(report.operator_id,
                                                            report.files_store)}
        for p, rows in enumerate(report.rows_per_partition):
            # Rows of the two batches before (a batch no longer retained: taken as unchanged).
            prev = counts.get((report.label, batch - 1, p), 0) if batch - 1 in earlier else rows
            prev_prev = (counts.get((report.label, batch - 2, p), 0) if batch - 2 in earlier
                         else prev)
            if report.label in fed:
                put, removed = changes.get((report.label, batch, p), (0, 0))
                _prev_put, prev_removed = changes.get((report.label, batch - 1, p), (0, 0))
                inserted = max(0, rows - prev + removed)
                replaced = max(0, put - inserted)
                prev_inserted = max(0, prev - prev_prev + prev_removed)
            elif compared is not None:
                inserted, removed, replaced = compared.get((report.label, p), (0, 0, 0))
                prev_inserted = max(0, prev - prev_prev)
            else:  # the batch before is gone: only what the row counts show
                inserted, removed, replaced = max(0, rows - prev), max(0, prev - rows), 0
                prev_inserted = max(0, prev - prev_prev)
            snap = snapshots[report.label].get(p)
            parts.append(partition_versions(
                rows, inserted, removed, replaced, prev, prev_inserted, prev_prev,
                restarted=restarted_each_batch, has_previous_version=batch > 0,
                snapshot_rows=counts.get((report.label, snap - 1, p), 0) if snap else None,
                snapshot_is_previous=snap == batch))
        estimate = MemoryEstimate()
        for p, part in enumerate(parts):
            if p not in present:
                continue
            estimate = estimate + estimate_partition(part, key_avg, value_avg, layout, checksum,
                                                     versions)
        churn = ("change feed" if report.label in fed else "state at both batches"
                 if compared is not None else "row counts")
        source = ("change feed" if report.label in from_feed else "state and change feed"
                  if report.label in replayed - labels else "state")
        floor = False
        if operator_model(ckpt, report.operator_id).family in PREFIX_INDEX_FAMILIES:
            index = _prefix_index(ckpt, report, batch, parts, present, layout, versions)
            floor = index is None  # no JVM here to measure the index's fixed part
            estimate = estimate.with_index(index or 0.0)
        out.append(StoreMeasurement(report, churn, parts, estimate, source, floor))
    return CheckpointMeasurement(batch, out, unreadable, earlier_rows)


def _prefix_index(ckpt, report, batch: int, parts, present, layout, versions) -> float | None:
    """The prefix index of a session window's store (memory_model.prefix_index_bytes), over its
    partitions: the session keys (every key field but the last, the session window) counted per
    partition with their UnsafeRow bytes in one Spark job. None where the index's fixed part
    cannot be measured (no JVM in this process)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    state = read_state(ckpt, report.operator_id, report.store_name, batch)
    key_type = state.schema["key"].dataType
    prefix_fields = key_type.fields[:-1]
    fixed = prefix_map_fixed_bytes(ckpt.spark, key_type.json(), len(prefix_fields))
    if fixed is None or not prefix_fields:
        return None
    prefix_schema = T.StructType(prefix_fields)
    keys = per_core_tasks(ckpt.spark, state).select(
        "partition_id", F.struct(*[F.col("key")[f.name].alias(f.name) for f in prefix_fields])
        .alias("prefix")).distinct()
    sized = keys.select("partition_id", F.expr(unsafe_row_size_sql("prefix", prefix_schema))
                        .alias("bytes")).groupBy("partition_id").agg(
        F.count("*").alias("prefixes"), F.avg("bytes").alias("bytes"))
    with spark_errors(f"counting the session keys of {report.label} at batch {batch}"):
        found = {int(r["partition_id"]): (int(r["prefixes"]), float(r["bytes"]))
                 for r in sized.collect()}
    return sum(prefix_index_bytes(part, *found.get(p, (0, 0.0)), fixed, layout, versions)
               for p, part in enumerate(parts) if p in present)


def measured_totals(measurements: list[StoreMeasurement]) -> MemoryEstimate:
    total = MemoryEstimate()
    for m in measurements:
        total = total + m.estimate
    return total


def disk_totals(measurements: list[StoreMeasurement]) -> dict:
    """Bytes on disk of the measured units, each store folder once (the units of one folder, a
    join in state format 3 or the variables of transformWithState, all report its files):
    ``{"latest_version": ..., "retained": ...}``."""
    folders = {}
    for m in measurements:
        folders[(m.operator_id, m.report.files_store)] = m.disk
    return {"latest_version": sum(d.get("latest_version_bytes", 0) for d in folders.values()),
            "retained": sum(d.get("retained_bytes", 0) for d in folders.values())}


_MIXED = "mixed:"  # keys a replayed batch both put and removed: the feed does not order them
# At most this many changed keys of a batch are broadcast to a scan of the state (more: shuffled).
MAX_BROADCAST_KEYS = 200_000


def _history(ckpt, units, batches_by_unit: dict, first_change: int, last_change: int,
             with_changes: bool = True, replay_from: int | None = None,
             replayed: set = frozenset(), counted_by_line: set = frozenset()):
    """In one Spark job: rows per (unit label, batch, partition) at the asked batches, and the
    distinct keys put and removed per (unit label, batch, partition) in ``first_change`` ..
    ``last_change`` from the state change feed, for the units Spark serves one
    (:func:`~state_runbooks.core.operators.serves_change_feed`; not with ``with_changes=False``).
    The ``replayed`` units' rows at ``replay_from`` and the batch after come from their state at
    ``replay_from`` and that batch's changes (:func:`_replay`; keys both put and removed in it
    counted under ``_MIXED + label`` instead). The ``counted_by_line`` units put a key only when
    their state lacks it (a deduplication), so a batch changes each key at most once per kind:
    their feed's lines are counted as they come, without grouping the keys (a shuffle of every
    change). Returns ``(rows, changes, labels with a change feed)``."""
    from pyspark.sql import functions as F

    # ``n``: the rows (or keys) a line stands for, summed per store, batch, partition and kind.
    columns = ["store", "batch_id", "partition_id", "kind", "n"]
    frames = [per_core_tasks(ckpt.spark, union_over_batches(
        ckpt, u.operator_id, u.store_name, sorted(batches_by_unit[u.label]),
        [F.lit(u.label).alias("store"), "partition_id", F.lit("rows").alias("kind"),
         F.lit(1).cast("long").alias("n")], u.state_variable)).select(*columns)
              for u in units if batches_by_unit.get(u.label)]
    fed = {u.label for u in units if serves_change_feed(ckpt, u)}
    changed = {u.label: _changed_keys(ckpt, u, first_change, last_change) for u in units
               if u.label in fed and with_changes and u.label not in counted_by_line}
    covered = replay_from is not None and first_change <= replay_from + 1 <= last_change
    # Changed keys the replay reads (a batch's changes: few beside the state) are kept by Spark
    # while the job runs: read once for its count and its join, and for the change counts too.
    replay_keys = {u.label: (changed[u.label] if covered and u.label in changed else
                             _changed_keys(ckpt, u, replay_from + 1, replay_from + 1)).persist()
                   for u in units if u.label in replayed}
    try:
        sizes = _changed_key_counts(replay_keys, replay_from + 1) if replay_keys else {}
        for u in units:
            if u.label in changed:
                frames.append(_change_counts(u, changed[u.label]).select(*columns))
            elif u.label in fed and with_changes:
                frames.append(change_line_counts(ckpt, u, first_change, last_change))
            if u.label in replayed:
                frames.append(_replay(ckpt, u, replay_from, replay_keys[u.label],
                                      sizes[u.label] <= MAX_BROADCAST_KEYS).select(*columns))
        if not frames:
            return {}, {}, fed
        counted = reduce(lambda a, b: a.unionByName(b), frames).groupBy(*columns[:4]).agg(
            F.sum("n").alias("n"))
        with spark_errors(f"reading earlier row counts and the changes of batches "
                          f"{first_change}..{last_change}"):
            result = counted.collect()
    finally:
        for frame in {id(f): f for f in replay_keys.values()}.values():
            frame.unpersist()
    rows, changes = {}, {}
    for r in result:
        key = (r["store"], int(r["batch_id"]), int(r["partition_id"]))
        if r["kind"] == "rows":
            rows[key] = int(r["n"])
        else:
            put, removed = changes.get(key, (0, 0))
            changes[key] = ((int(r["n"]), removed) if r["kind"] == "update"
                            else (put, int(r["n"])))
    return rows, changes, fed


def _changed_keys(ckpt, unit, first: int, last: int):
    """A row per key each batch of ``first`` .. ``last`` changed in ``unit`` (``batch_id``,
    ``partition_id``, ``key``): ``put`` 1 when the batch put it, ``removed`` 1 when it removed it
    (both: the feed does not order them). A shuffle of the changes only."""
    from pyspark.sql import functions as F

    feed = read_state_changes(ckpt, unit.operator_id, unit.store_name, first, last)
    return per_core_tasks(ckpt.spark, feed).groupBy("batch_id", "partition_id", "key").agg(
        F.max((F.col("change_type") == "update").cast("long")).alias("put"),
        F.max((F.col("change_type") == "delete").cast("long")).alias("removed"))


def _changed_key_counts(changed_keys: dict, batch: int) -> dict[str, int]:
    """``{label: keys that ``batch`` changed}`` of each unit's :func:`_changed_keys`, in one Spark
    job for every unit (a job per unit cost about a second each on a join's four stores)."""
    from pyspark.sql import functions as F

    counts = reduce(lambda a, b: a.unionByName(b), [
        keys.where(F.col("batch_id") == batch).groupBy().count()
        .select(F.lit(label).alias("store"), "count") for label, keys in changed_keys.items()])
    with spark_errors(f"counting the keys batch {batch} changed"):
        return {r["store"]: int(r["count"]) for r in counts.collect()}


def _change_counts(unit, changed_keys):
    """The distinct keys put and removed per batch and partition (``store``, ``batch_id``,
    ``partition_id``, ``kind`` "update" or "delete", ``n``) from :func:`_changed_keys`."""
    from pyspark.sql import functions as F

    kinds = F.array(F.struct(F.lit("update").alias("kind"), F.col("put").alias("n")),
                    F.struct(F.lit("delete").alias("kind"), F.col("removed").alias("n")))
    return changed_keys.groupBy("batch_id", "partition_id").agg(
        F.sum("put").alias("put"), F.sum("removed").alias("removed")).select(
        F.lit(unit.label).alias("store"), "batch_id", "partition_id",
        F.explode(kinds).alias("c")).select("store", "batch_id", "partition_id", "c.kind",
                                            F.col("c.n").cast("long").alias("n"))


def _replay(ckpt, unit, first: int, changed_keys, broadcast: bool):
    """Rows per partition of ``unit`` (a store read by its name) at ``first`` and at
    ``first + 1`` (``store``, ``batch_id``, ``partition_id``, ``kind`` "rows", ``n``), with no
    grouping of the state by key: its rows at ``first`` counted per partition, those of the keys
    the next batch did not change counted again for ``first + 1``, plus the changed keys it left
    in the state (their change a put). ``changed_keys``: :func:`_changed_keys` of a range with
    ``first + 1``. The changed keys are one batch's, usually few beside the state: with
    ``broadcast`` (up to ``MAX_BROADCAST_KEYS`` of them) they are broadcast to the state's scan.
    A key that batch both put and removed is counted under ``_MIXED + label`` (the feed does not
    order them; the caller reads the state instead)."""
    from pyspark.sql import functions as F

    label = F.lit(unit.label)
    changes = changed_keys.where(F.col("batch_id") == first + 1)
    changed = changes.select("partition_id", "key", F.lit(1).alias("changed"))
    state = per_core_tasks(ckpt.spark, read_state(ckpt, unit.operator_id, unit.store_name, first)
                           .select("partition_id", "key"))
    # Broadcast only a bounded number of keys, so the driver's memory stays flat in keys; a
    # batch that changed more is joined with a shuffle instead.
    held = state.join(F.broadcast(changed) if broadcast else changed, ["partition_id", "key"],
                      "left").groupBy(
        "partition_id").agg(F.count(F.lit(1)).alias("at_first"),
                            F.count(F.when(F.col("changed").isNull(), 1)).alias("unchanged"))
    from_state = held.select("partition_id", F.explode(F.array(
        F.struct(label.alias("store"), F.lit(first).cast("long").alias("batch_id"),
                 F.col("at_first").alias("n")),
        F.struct(label.alias("store"), F.lit(first + 1).cast("long").alias("batch_id"),
                 F.col("unchanged").alias("n")))).alias("r"))
    kept = changes.where("put = 1").groupBy("partition_id").agg(
        F.sum(1 - F.col("removed")).alias("kept"), F.sum("removed").alias("mixed"))
    from_changes = kept.select("partition_id", F.explode(F.array(
        F.struct(label.alias("store"), F.lit(first + 1).cast("long").alias("batch_id"),
                 F.col("kept").alias("n")),
        F.struct(F.lit(_MIXED + unit.label).alias("store"),
                 F.lit(first + 1).cast("long").alias("batch_id"), F.col("mixed").alias("n"))))
        .alias("r")).where("r.n > 0")
    return from_state.unionByName(from_changes).select(
        "r.store", "r.batch_id", "partition_id", F.lit("rows").alias("kind"),
        F.col("r.n").cast("long").alias("n"))


def _rows_before_from_changes(reports, earlier: list[int], batch: int, changes: dict,
                              counts: dict) -> bool:
    """Rows per partition at the ``earlier`` batches of units whose state only gets new keys, into
    ``counts`` (:func:`~state_runbooks.core.growth.rows_back_from_changes`, per partition).
    False when a count comes out below zero (nothing is written then)."""
    rows_at = {(r.label, p): rows for r in reports for p, rows in enumerate(r.rows_per_partition)}
    found = rows_back_from_changes(rows_at, {((label, p), b): c for (label, b, p), c
                                             in changes.items()}, batch, len(earlier))
    if found is None:
        return False
    counts.update({(label, b, p): rows for ((label, p), b), rows in found.items()})
    return True


def _snapshot_versions(ckpt, unit, batch_id: int) -> dict[int, int]:
    """partition -> newest snapshot version the older in-memory version would be read from."""
    out: dict[int, int] = {}
    for f in ckpt.state_files(unit.operator_id, unit.files_store):
        if f.kind == "snapshot" and f.version <= batch_id:
            out[f.partition_id] = max(out.get(f.partition_id, 0), f.version)
    return out

