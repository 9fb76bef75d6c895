"""What the estimate-state-size runbook shows and concludes: the measured stores and partitions as
tables, the estimate per store in prose, the recommendation, and the run summary with its
findings, and what the demo showed."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from state_runbooks.common.formatting import format_bytes
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import rocksdb_only
from state_runbooks.core.state_limits import HDFS_HEAP_PER_PARTITION, HDFS_STATE_ROWS

from .demo import ACCURACY_TARGET, DemoResult
from .measurement import CheckpointMeasurement, StoreMeasurement, disk_totals, measured_totals
from .napkin_estimate import Napkin
from .projection import Projection
from .recommendation import PROVIDER_NAMES, recommend, thresholds_line


@dataclass
class Sizing:
    """What the runbook's steps produced, on the demo or a given checkpoint: the one result the
    summary and the demo's closing bullets read."""
    napkin: Napkin | None
    measured: CheckpointMeasurement
    restarted_each_batch: bool  # the checkpoint's query starts once per batch
    growth: object  # rows per store over the retained batches (a DataFrame), or None
    projection: Projection | None
    ckpt: Checkpoint | None = None  # its provider, and what its operators run on
    demo: DemoResult | None = None

    @property
    def provider_kind(self) -> str:
        return self.ckpt.provider_kind if self.ckpt is not None else "hdfs"


def measured_summary(measurements: list[StoreMeasurement], restarted_each_batch: bool) -> dict:
    """The summary's ``measured`` entry."""
    total = measured_totals(measurements)
    return {
        "batch_id": measurements[0].batch_id if measurements else None,
        "rows": sum(m.rows for m in measurements),
        "payload_bytes": sum(m.payload_bytes for m in measurements),
        "estimated_memory_bytes": round(total.reported_bytes),
        "estimate_is_lower_bound": any(m.lower_bound for m in measurements),
        "estimated_memory_sd_bytes": round(total.reported_sd),
        "heap_bytes": round(total.heap_bytes),
        "restarted_each_batch": restarted_each_batch,
        "disk_bytes": disk_totals(measurements),
        "per_store": [{"operator_id": m.operator_id, "operator_name": m.operator_name,
                       "store_name": m.store_name, "unit": m.label,
                       **({"state_variable": m.state_variable} if m.state_variable else {}),
                       "rows": m.rows, "key_bytes": m.key_bytes,
                       "value_bytes": m.value_bytes, "rows_per_partition": m.rows_per_partition,
                       "payload_bytes_per_partition": m.payload_bytes_per_partition,
                       "disk_bytes": m.disk, "churn_source": m.churn_source,
                       "earlier_rows_source": m.earlier_rows_source,
                       "estimate_is_lower_bound": m.lower_bound,
                       **{f"estimate_{k}": v for k, v in m.estimate.as_dict().items()
                          if k not in ("rows", "payload_bytes")}}
                      for m in measurements],
    }


def stores_table(measurements: list[StoreMeasurement]):
    """One row per store: rows and bytes as stored, on disk, and the in-memory estimate."""
    import pandas as pd
    return pd.DataFrame([{
        "store": m.label, "operator": m.operator_name, "rows": m.rows,
        "key_B": m.key_bytes, "value_B": m.value_bytes,
        "disk_latest_B": m.disk.get("latest_version_bytes"),
        "disk_retained_B": m.disk.get("retained_bytes"),
        "hdfs_heap_B": round(m.estimate.heap_bytes),
        "hdfs_memoryUsedBytes_B": round(m.estimate.reported_bytes),
    } for m in measurements])


def partitions_table(measurements: list[StoreMeasurement]):
    """One row per store partition: rows, row bytes, and what the older kept version adds."""
    import pandas as pd
    rows = []
    for m in measurements:
        for p, part in enumerate(m.partitions):
            rows.append({"store": m.label, "partition": p, "rows": part.rows,
                         "payload_B": (m.payload_bytes_per_partition[p]
                                       if p < len(m.payload_bytes_per_partition) else None),
                         "inserted": part.inserted, "removed": part.removed,
                         "replaced": part.replaced, "table_new": part.new_capacity,
                         "table_old": part.old_capacity})
    return pd.DataFrame(rows)


def summarize(summary, result: Sizing) -> None:
    """Fill the summary: the runbook's keys, and findings for what needs acting on (a store
    Spark's reader refused is not measured, and said)."""
    napkin_est, measurements = result.napkin, result.measured.stores
    unreadable, projection = result.measured.unreadable, result.projection
    reported_now = result.demo.reported_now if result.demo else None
    comparisons = result.demo.comparisons if result.demo else None
    d = summary.details
    d["unmeasured"] = [r.summary() for r in unreadable or []]
    if unreadable:
        summary.add_finding("info", "stores_not_measured",
                            f"{len(unreadable)} store(s) Spark's reader refused were not "
                            f"measured: {', '.join(r.label for r in unreadable)}")
    d["napkin"] = napkin_est.summary() if napkin_est else None
    d["measured"] = (measured_summary(measurements, result.restarted_each_batch)
                     if measurements else None)
    d["reported_memory_bytes"] = reported_now["memory_used_bytes"] if reported_now else None
    d["projection"] = projection.summary() if projection else None
    if comparisons:
        d["comparison"] = [c.summary() for c in comparisons]
        d["estimator_error"] = {c.workload: round(c.error, 4) for c in comparisons
                                if c.error is not None}
        worst = max((abs(c.error) for c in comparisons if c.error is not None), default=0.0)
        if worst > ACCURACY_TARGET:
            summary.add_finding("warning", "estimator_error",
                                f"estimate off memoryUsedBytes by {worst:.1%} > "
                                f"{ACCURACY_TARGET:.0%} on a demo workload")
    rec = napkin_est.recommendation if napkin_est else None
    if rec is not None and rec.provider != napkin_est.inputs.provider:
        summary.add_finding("info", "napkin_provider",
                            f"napkin: {PROVIDER_NAMES[rec.provider]} recommended over the planned "
                            f"{PROVIDER_NAMES[napkin_est.inputs.provider]} ({rec.reason})")
    if measurements and result.provider_kind == "hdfs":
        total = measured_totals(measurements)
        partitions = max(m.num_partitions for m in measurements)
        per_partition = total.heap_bytes / partitions
        if total.rows > HDFS_STATE_ROWS or per_partition > HDFS_HEAP_PER_PARTITION:
            summary.add_finding("warning", "hdfs_state_too_large",
                                f"{total.rows:,} rows, about {format_bytes(total.heap_bytes)} of "
                                f"heap ({format_bytes(per_partition)} per partition) on the "
                                "HDFS-backed provider: plan RocksDB "
                                "(runbooks/capacity-planning.md)")
        elif projection and (projection.rows > HDFS_STATE_ROWS or projection.heap_bytes
                             / partitions > HDFS_HEAP_PER_PARTITION):
            summary.add_finding("warning", "hdfs_state_growing",
                                f"at {projection.growth_per_batch:,.0f} rows per batch the state "
                                f"reaches {projection.rows:,} rows, about "
                                f"{format_bytes(projection.heap_bytes)} of heap, in "
                                f"{projection.horizon_batches:,} batches: plan RocksDB before "
                                "(runbooks/capacity-planning.md)")


def estimate_lines(measurements: list[StoreMeasurement], restarted_each_batch: bool,
                   provider_kind: str = "hdfs") -> list[str]:
    """Per store, what the HDFS-backed provider holds for the measured rows, and the figure
    Spark's memoryUsedBytes is expected to show, with why."""
    lines = []
    if provider_kind != "hdfs":
        lines.append(textwrap.fill(
            f"This checkpoint's provider is {provider_kind}: the figures below are what the same "
            "rows would take on the HDFS-backed provider. RocksDB keeps them in files on local "
            "disk, and its memoryUsedBytes follows its configuration "
            "(runbooks/capacity-planning.md).", 100))
    for m in measurements:
        e = m.estimate
        old_rows = sum(p.old_rows for p in m.partitions)
        same = sum(1 for p in m.partitions if p.old_capacity and p.old_capacity == p.new_capacity)
        kept = [p for p in m.partitions if p.old_capacity]
        if not kept:
            why = "one version in memory (the first batch, or maxBatchesToRetainInMemory=1)"
        elif same == len(kept):
            why = ("both versions' tables have the same length in every partition, so "
                   "SizeEstimator samples the same slots twice and counts a shared row once")
        else:
            why = (f"the tables differ in length in {len(kept) - same} of {len(kept)} partitions "
                   f"(older {kept[0].old_capacity:,} slots, newest {kept[0].new_capacity:,} in "
                   "partition 0), so SizeEstimator samples different slots and counts most "
                   "shared rows twice")
        text = (f"{m.label} ({m.operator_name}): {m.rows:,} rows, {format_bytes(m.payload_bytes)} "
                f"as stored. Heap {format_bytes(e.heap_bytes)} = row objects "
                f"{format_bytes(e.row_object_bytes)} + map nodes {format_bytes(e.entry_bytes)} "
                f"({m.rows:,} + {old_rows:,} in the older version) + hash tables "
                f"{format_bytes(e.table_bytes)} + fixed {format_bytes(e.fixed_bytes)}"
                + (f" + the session keys' index {format_bytes(e.index_bytes)}"
                   if e.index_bytes else "") + ". Expected "
                f"memoryUsedBytes {format_bytes(e.reported_bytes)} +/- "
                f"{format_bytes(e.reported_sd)} (one standard deviation of SizeEstimator's sampling): {why}. "
                f"Churn from the {m.churn_source}."
                + (" A lower bound: the provider also keeps, per version, an index from each "
                   "session key to its sessions, which only a JVM in this process can measure."
                   if m.lower_bound else ""))
        lines.append(textwrap.fill(text, 100))
    total = measured_totals(measurements)
    mode = ("restarted for every batch" if restarted_each_batch
            else "running continuously (restarted_each_batch=False)")
    lines.append(f"Total: heap {format_bytes(total.heap_bytes)}, expected memoryUsedBytes "
                 f"{format_bytes(total.reported_bytes)} for a query {mode}.")
    return lines


def recommendation_lines(napkin_est: Napkin | None, measurements: list[StoreMeasurement] | None,
                         projection: Projection | None, ckpt=None) -> list[str]:
    """The recommendation from the napkin (when there is one), from the measured state, and at
    the projection; with the checkpoint, what it runs on only (RocksDB for transformWithState)
    and what a change of the provider it pins costs."""
    lines = []
    only = rocksdb_only(ckpt) if ckpt is not None else None
    pinned = ckpt.provider_kind if ckpt is not None else None
    if napkin_est is not None:
        rec = napkin_est.recommendation
        lines.append(f"Napkin: {PROVIDER_NAMES[rec.provider]}, {rec.partitions:,} partitions "
                     f"({napkin_est.rows:,} rows).")
    if measurements:
        total = measured_totals(measurements)
        partitions = max(m.num_partitions for m in measurements)
        now = recommend(total.rows, total.heap_bytes, total.payload_bytes, partitions,
                        rocksdb_only=only)
        lines.append(f"Measured: {PROVIDER_NAMES[now.provider]}, {now.partitions:,} partitions "
                     f"({total.rows:,} rows); the checkpoint has {partitions:,}.")
        if projection is not None and total.rows:
            scale = projection.rows / total.rows
            later = recommend(projection.rows, total.heap_bytes * scale,
                              total.payload_bytes * scale, partitions, rocksdb_only=only)
            lines.append(f"In {projection.horizon_batches:,} batches at the measured growth: "
                         f"{PROVIDER_NAMES[later.provider]}, {later.partitions:,} partitions "
                         f"({projection.rows:,} rows).")
        wanted = {now.provider} | ({later.provider} if projection is not None and total.rows
                                   else set())
        if pinned == "hdfs" and "rocksdb" in wanted:
            lines.append("The checkpoint pins the HDFS-backed provider: a restart keeps it "
                         "whatever the session says. 09 rewrite state moves this checkpoint to "
                         "RocksDB keeping every row; a new checkpoint would start with empty "
                         "state.")
        elif pinned == "rocksdb" and "hdfs" in wanted:
            lines.append("The checkpoint pins RocksDB, which keeps state of any of these sizes: "
                         "keep it (going back to the HDFS-backed provider needs a new "
                         "checkpoint, whose state starts empty).")
    if napkin_est is not None or (measurements and not only):
        lines.append(thresholds_line())
    if measurements and only:
        lines.append(thresholds_line(only))
    return [textwrap.fill(line, 100, subsequent_indent="  ") for line in lines]



def what_this_showed(result: Sizing) -> list[str]:
    """The demo's lessons, each with the figures of this run: the napkin against the rows
    measured, the heap those rows take on the HDFS-backed provider, what ``memoryUsedBytes``
    reads (with the demo's comparisons), how the watermark bounds the state (the growth table
    and the projection), and the provider and partitions to choose before the first start."""
    napkin_est, measurements = result.napkin, result.measured.stores
    growth, projection, ckpt = result.growth, result.projection, result.ckpt
    comparisons = result.demo.comparisons if result.demo else None
    lines = []
    total = measured_totals(measurements)
    if napkin_est is not None and measurements:
        i = napkin_est.inputs
        same = "exactly that" if napkin_est.rows == total.rows else f"{total.rows:,}"
        lines.append(f"the napkin predicted {napkin_est.rows:,} rows from the input rate, the "
                     f"{i.watermark_seconds:g} s watermark and the {i.trigger_seconds:g} s "
                     f"trigger alone, before any query ran; the checkpoint holds {same}")
    if measurements and total.payload_bytes:
        lines.append(f"{total.rows:,} rows take {format_bytes(total.payload_bytes)} as stored "
                     f"but about {format_bytes(total.heap_bytes)} of heap on the HDFS-backed "
                     f"provider, {total.heap_bytes / total.payload_bytes:.1f}x: JVM objects per "
                     "row, two versions kept, a hash table per version")
        kept = [p for m in measurements for p in m.partitions if p.old_capacity]
        twice = any(p.old_capacity != p.new_capacity for p in kept)
        text = (f"Spark's memoryUsedBytes is SizeEstimator's sample of that heap: expected "
                f"{format_bytes(total.reported_bytes)} +/- {format_bytes(total.reported_sd)}"
                + (", above the heap, as it counts the rows both versions share twice"
                   if twice and total.reported_bytes > total.heap_bytes else ""))
        judged = [c for c in comparisons or [] if c.error is not None]
        if judged:
            within = sum(abs(c.error) <= ACCURACY_TARGET for c in judged)
            text += (f"; the estimate came within {ACCURACY_TARGET:.0%} of it on "
                     + (f"all {len(judged)} workloads" if within == len(judged) else
                        f"only {within} of {len(judged)} workloads"))
        lines.append(text)
    if growth is not None and not growth.empty:
        rows = [int(v) for v in growth.sum(axis=1).tolist()]
        batches = [int(b) for b in growth.index]
        since = len(rows) - 1
        while since > 0 and rows[since - 1] == rows[-1]:
            since -= 1
        ahead = (f"; {projection.horizon_batches:,} batches on, the projection stays at "
                 f"{projection.rows:,} rows" if projection is not None
                 and projection.rows == rows[-1] else "")
        if 0 < since < len(rows) - 1:
            step = (rows[since] - rows[0]) / (batches[since] - batches[0])
            lines.append(f"the state grew by {step:,.0f} rows a batch up to batch "
                         f"{batches[since]}, then held {rows[-1]:,} rows through batch "
                         f"{batches[-1]}: the watermark evicts as many as each batch adds"
                         + ahead)
        else:
            lines.append(f"the state went from {rows[0]:,} to {rows[-1]:,} rows over batches "
                         f"{batches[0]}..{batches[-1]} without levelling off"
                         + (f"; at that rate it holds {projection.rows:,} rows "
                            f"{projection.horizon_batches:,} batches on" if projection else ""))
    if measurements:
        partitions = max(m.num_partitions for m in measurements)
        now = recommend(total.rows, total.heap_bytes, total.payload_bytes, partitions,
                        rocksdb_only=rocksdb_only(ckpt) if ckpt is not None else None)
        agree = (napkin_est is not None and napkin_est.recommendation.provider == now.provider
                 and napkin_est.recommendation.partitions == now.partitions)
        lines.append(f"{PROVIDER_NAMES[now.provider]} with {now.partitions:,} partitions suits "
                     "this state" + (", by the napkin and the measurement alike" if agree
                                     else "") + ": choose both before the first start, when the "
                     f"checkpoint pins them (this one has {partitions:,} partitions)")
    return lines
