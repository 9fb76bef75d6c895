"""Proof that a query runs on RocksDB: a short demo stream with exactly the plan's confs, and the
evidence it leaves (the pinned class, the state files written, the ``rocksdb*`` metrics, and the
instances that joined the bounded memory pool).

Figures only a JVM can give (heap after GC, RocksDB memory manager instances) are read only when
this process's JVM is the executor that holds the state; otherwise :func:`jvm_unavailable` says
why not (over Spark Connect, or a cluster's master).
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.runtime import provider_kind
from state_runbooks.common.spark_settings import PROVIDER_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.spark_internals import rocksdb_instances_under_bounded_memory
from state_runbooks.demos.checkpoints import build_demo_checkpoint
from state_runbooks.session.spark_session import is_connect

from .provider import WORKLOAD, RocksDBPlan


def _kinds_by_version(ckpt: Checkpoint) -> dict[int, list[str]]:
    out: dict[int, set] = {}
    for f in ckpt.state_files():
        out.setdefault(f.version, set()).add(f.kind)
    return {v: sorted(k) for v, k in sorted(out.items())}


@dataclass
class Verification:
    """Evidence that a query ran on RocksDB: pinned class, files written, metrics reported."""
    checkpoint_path: str
    pinned_provider_class: str | None
    kinds_by_version: dict
    sst_files: int
    rocksdb_metrics: dict  # the rocksdb* custom metrics of the last batch, summed over operators
    memory_used_bytes: int
    # RocksDB instances under bounded memory in this JVM, before and after the stream
    bounded_instances: tuple[int | None, int | None]
    jvm_note: str | None = None  # why JVM-only figures were not read (jvm_unavailable)

    @property
    def rocksdb_in_use(self) -> bool:
        return (provider_kind(self.pinned_provider_class) == "rocksdb"
                and bool(self.rocksdb_metrics)
                and any(k in ("zip", "changelog") for kinds in self.kinds_by_version.values()
                        for k in kinds))


def jvm_unavailable(spark) -> str | None:
    """None when this process's JVM is the executor that holds the state (a classic session in
    local mode); otherwise, in a few words, why figures only that JVM has (heap after GC, RocksDB
    memory manager instances) cannot be read from here."""
    if is_connect(spark):
        return "not observable over Spark Connect: the executors' JVMs are on the server side"
    try:
        master = str(spark.sparkContext.master)
    except Exception:  # noqa: BLE001 - no SparkContext access on some shared clusters
        return "not observable: this session gives no access to the SparkContext"
    if not master.startswith("local"):
        return f"not observable from the driver: master {master} runs the executors in other JVMs"
    return None


def bounded_rocksdb_instances(spark) -> int | None:
    """RocksDB instances under bounded memory in this JVM (the executor, in local mode only).
    None when Spark's memory manager is not reachable (see :func:`jvm_unavailable`)."""
    if jvm_unavailable(spark):
        return None
    try:
        return rocksdb_instances_under_bounded_memory(spark)
    except Exception:  # noqa: BLE001 - internal API: absent or different elsewhere
        return None


def _sst_files(ckpt: Checkpoint) -> int:
    """SST files RocksDB uploaded with its snapshots (``<store folder>/SSTs/*.sst``)."""
    return sum(1 for rel in ckpt.fs.walk("state") if rel.endswith(".sst") and "/SSTs/" in rel)


def _rocksdb_metrics(progress: dict) -> dict:
    out: dict[str, int] = {}
    for op in progress.get("stateOperators", []):
        for key, value in (op.get("customMetrics") or {}).items():
            if key.startswith("rocksdb"):
                out[key] = out.get(key, 0) + int(value)
    return dict(sorted(out.items()))


def verify_rocksdb(spark, folder: str, rocksdb_plan: RocksDBPlan, batches: int = 2) -> Verification:
    """Run a short demo stream with exactly the plan's confs and collect the evidence."""
    path = f"{folder}/verify"
    before = bounded_rocksdb_instances(spark)
    run = build_demo_checkpoint(spark, WORKLOAD, path, batches=batches,
                                provider=rocksdb_plan.provider_setup, rows_per_batch=10,
                                partitions=2, extra_conf=rocksdb_plan.confs)
    after = bounded_rocksdb_instances(spark)
    ckpt = Checkpoint(spark, path)
    last = run.progress[-1] if run.progress else {}
    return Verification(
        checkpoint_path=path, pinned_provider_class=ckpt.pinned_conf.get(PROVIDER_CONF),
        kinds_by_version=_kinds_by_version(ckpt), sst_files=_sst_files(ckpt),
        rocksdb_metrics=_rocksdb_metrics(last),
        memory_used_bytes=sum(op["memoryUsedBytes"] for op in last.get("stateOperators", [])),
        bounded_instances=(before, after), jvm_note=jvm_unavailable(spark))


def verification_lines(v: Verification, rocksdb_plan: RocksDBPlan) -> list[str]:
    lines = [f"pinned in the offsets log: {v.pinned_provider_class}"]
    for version, kinds in v.kinds_by_version.items():
        lines.append(f"state version {version}: {', '.join(kinds)}")
    lines.append(f"SST files uploaded to SSTs/: {v.sst_files}"
                 + (" (with changelog checkpointing, snapshots and their SSTs come later, from "
                    "state maintenance)" if rocksdb_plan.changelog_checkpointing else ""))
    lines.append(f"RocksDB metrics in the query progress: {len(v.rocksdb_metrics)} rocksdb* custom "
                 f"metrics, e.g. rocksdbPutCount={v.rocksdb_metrics.get('rocksdbPutCount')}")
    before, after = v.bounded_instances
    if rocksdb_plan.bounded_memory_mb:
        if before is None or after is None:
            lines.append(f"bounded memory: {v.jvm_note or 'not observable from here'} (the "
                         "RocksDB memory manager's instance count)")
        else:
            lines.append(f"bounded memory ({rocksdb_plan.bounded_memory_mb} MB shared by all "
                         f"RocksDB instances of an executor): {after - before} instances "
                         "joined the bounded pool")
    lines.append("verdict: RocksDB is in use" if v.rocksdb_in_use else
                 "verdict: RocksDB is NOT in use")
    return lines
