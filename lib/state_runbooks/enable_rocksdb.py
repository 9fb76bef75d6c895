"""The enable-RocksDB runbook's logic: pick the provider class, prove it is in effect, measure it.

Facts this module is built on, each demonstrated by a function here (and by the runbook's cells):

- ``spark.conf.set`` accepts any class name. A class that does not exist fails only when a stateful
  query starts (``STREAM_FAILED``, caused by ``ClassNotFoundException``), and that failed start has
  already written ``offsets/0`` with the bad class pinned, so the checkpoint stays broken after the
  conf is fixed (:func:`demonstrate_wrong_class`). Hence :func:`check_provider_class` first.
- The provider is pinned in the checkpoint's offsets log; a restart keeps it whatever the session
  says (:func:`demonstrate_pinned_provider`).
- The changelog-checkpointing flag is not pinned: on restart the session's value decides what the
  next batch writes (:func:`demonstrate_changelog_flip`).

On Spark Connect there is no JVM on this side: the class is checked by Spark itself, through a
one-row stateful query on a scratch checkpoint, and the figures only a JVM can give (heap after
GC, RocksDB memory manager instances) are reported as not observable (:func:`jvm_unavailable`).
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field

from .checkpoint import Checkpoint
from .demo import PROVIDERS, DemoRun, build_demo_checkpoint, new_demo_path, run_demo_batches
from .errors import RunbookError, first_line, root_cause, spark_errors
from .formatting import format_bytes
from .redaction import redact_conf
from .session import is_connect
from .runtime import (CHANGELOG_CONF, DATABRICKS_ROCKSDB_PROVIDER, OSS_HDFS_PROVIDER,
                      OSS_ROCKSDB_PROVIDER, PROVIDER_CONF, detect_runtime, provider_classes,
                      provider_kind)

# A class name commonly published for RocksDB (in guides and snippets). It is not a class anywhere.
WIDELY_PUBLISHED_WRONG_CLASS = "com.databricks.sql.streaming.state.RocksDBStateProvider"
STATE_STORE_PROVIDER_BASE = "org.apache.spark.sql.execution.streaming.state.StateStoreProvider"
BOUNDED_MEMORY_CONF = "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage"
MAX_MEMORY_MB_CONF = "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"
KNOWN_ROCKSDB_CLASSES = (OSS_ROCKSDB_PROVIDER, DATABRICKS_ROCKSDB_PROVIDER)

# Demo and measurement workload: a deduplication with a 5 s watermark; every id arrives twice
# per batch, and with up to 6 batches nothing is evicted yet, so the state holds rows_per_batch / 2
# rows per batch.
WORKLOAD = "dedup"
BENCH_BATCHES = 4
MIN_BENCHMARK_ROWS = 1_000
# Differences smaller than this (relative) are called noise in the verdict.
NOISE_RATIO = 1.25
# On a given checkpoint the demonstration queries run only when asked: whoever points the runbook at
# a checkpoint wants its answer (steps 1, 3 and 4), not a lesson that takes a minute.
SKIPPED = "skipped on a given checkpoint: pass demonstrations=True to run it"
SKIPPED_DEMONSTRATIONS = ("demonstrations (steps 2 and 5-8) skipped on a given checkpoint: pass "
                          "demonstrations=True to run them")
# Pinned confs that decide how state is stored (shown next to the provider).
STATE_CONF_MARKERS = ("stateStore", "stateFormatVersion", "shuffle.partitions",
                      "statefulOperator", "multipleWatermarkPolicy")


# -- 1. the class ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClassCheck:
    """Whether a provider class can be used in this JVM, checked the way Spark loads it."""
    name: str
    loadable: bool
    is_provider: bool
    reason: str  # "" when usable, else e.g. "java.lang.ClassNotFoundException"

    @property
    def ok(self) -> bool:
        return self.loadable and self.is_provider

    def line(self) -> str:
        if self.ok:
            return f"usable: {self.name} is a StateStoreProvider on this Spark"
        return f"NOT usable: {self.name}: {self.reason}"


def check_provider_class(spark, name: str) -> ClassCheck:
    """Whether ``name`` is a usable ``StateStoreProvider`` here. Never raises: the result says why
    a class is not usable.

    A classic session loads it with Spark's class loader, as Spark does for ``providerClass``. A
    Spark Connect session has no JVM on this side, so Spark itself is asked: a one-row stateful
    query on a scratch checkpoint with the class set (:func:`probe_provider_class`)."""
    if is_connect(spark):
        return probe_provider_class(spark, name)
    utils = spark._jvm.org.apache.spark.util.Utils
    try:
        cls = utils.classForName(name, False, False)
    except Exception as exc:  # noqa: BLE001 - Py4J wraps ClassNotFoundException and friends
        java = getattr(exc, "java_exception", None)
        reason = str(java.getClass().getName()) if java is not None else first_line(exc)
        return ClassCheck(name, False, False, reason)
    base = utils.classForName(STATE_STORE_PROVIDER_BASE, False, False)
    if not base.isAssignableFrom(cls):
        return ClassCheck(name, True, False, f"not a subclass of {STATE_STORE_PROVIDER_BASE}")
    return ClassCheck(name, True, True, "")


# Spark's error when the class loads but is not a provider (inside STREAM_FAILED).
INVALID_PROVIDER_ERROR = "STATE_STORE_INVALID_PROVIDER"
_probed: dict = {}  # (Connect session id, class name) -> ClassCheck: a class stays what it is


def probe_provider_class(spark, name: str) -> ClassCheck:
    """Ask Spark whether ``name`` works as the provider: start a one-row deduplication with it on a
    scratch checkpoint. A class that does not exist fails the start with ``STREAM_FAILED`` caused
    by ``ClassNotFoundException``; one that is not a provider, with ``STREAM_FAILED`` around
    ``STATE_STORE_INVALID_PROVIDER``. Works on any session; a classic one has a faster way."""
    key = (getattr(spark, "session_id", id(spark)), name)
    if key not in _probed:
        error = _start_error(spark, new_demo_path("provider-check"), {PROVIDER_CONF: name})
        if error is None:
            check = ClassCheck(name, True, True, "")
        else:
            cause = root_cause(error.spark_error) or ""
            if INVALID_PROVIDER_ERROR in str(error) or INVALID_PROVIDER_ERROR in cause:
                check = ClassCheck(name, True, False,
                                   f"not a subclass of {STATE_STORE_PROVIDER_BASE}")
            elif "ClassNotFoundException" in cause or "NoClassDefFoundError" in cause:
                check = ClassCheck(name, False, False, cause.split(":", 1)[0])
            else:
                check = ClassCheck(name, False, False, f"a stateful query with it failed to "
                                   f"start: {first_line(error)}")
        _probed[key] = check
    return _probed[key]


def require_provider_class(spark, name: str, runtime: str = "") -> ClassCheck:
    """:func:`check_provider_class`, raising a one-line RunbookError naming the usable classes."""
    check = check_provider_class(spark, name)
    if check.ok:
        return check
    usable = [c for c in KNOWN_ROCKSDB_CLASSES if c != name and check_provider_class(spark, c).ok]
    hint = f"; usable here: {', '.join(usable)}" if usable else ""
    which = f" (runtime {runtime})" if runtime else ""
    runtime_hint = (" (use runtime='auto' or 'oss' on open-source Spark)"
                    if runtime == "databricks" else "")
    raise RunbookError(f"provider class {name}{which} is not usable on this Spark: "
                       f"{check.reason}{hint}{runtime_hint}")


# -- 2. the plan and the session -------------------------------------------------------------------
@dataclass(frozen=True)
class RocksDBPlan:
    """The provider and RocksDB options a runbook run sets, validated."""
    runtime: str
    provider_class: str
    changelog_checkpointing: bool
    bounded_memory_mb: int
    confs: dict  # key -> value, in the order they are set

    @property
    def provider_setup(self) -> str:
        """The demo's name for this setup: ``rocksdb`` or ``rocksdb_changelog``."""
        return "rocksdb_changelog" if self.changelog_checkpointing else "rocksdb"


def plan(spark, runtime: str = "auto", changelog_checkpointing: bool = True,
         bounded_memory_mb: int = 0, environ: dict | None = None) -> RocksDBPlan:
    """Resolve the RocksDB provider class for the runtime, check it loads, and list the confs.

    Raises RunbookError (one line) on bad input, before any query starts."""
    runtime = detect_runtime(runtime, environ)
    if not isinstance(bounded_memory_mb, int) or isinstance(bounded_memory_mb, bool) \
            or bounded_memory_mb < 0:
        raise RunbookError(f"bounded_memory_mb={bounded_memory_mb!r} is not valid: use 0 (RocksDB "
                           "memory unbounded) or a cap in MB, e.g. 512")
    if not isinstance(changelog_checkpointing, bool):
        raise RunbookError(f"changelog_checkpointing={changelog_checkpointing!r} is not valid: use "
                           "True or False")
    provider = provider_classes(runtime, environ).rocksdb
    require_provider_class(spark, provider, runtime)
    confs = {PROVIDER_CONF: provider,
             CHANGELOG_CONF: "true" if changelog_checkpointing else "false",
             BOUNDED_MEMORY_CONF: "true" if bounded_memory_mb else "false"}
    if bounded_memory_mb:
        confs[MAX_MEMORY_MB_CONF] = str(bounded_memory_mb)
    return RocksDBPlan(runtime, provider, changelog_checkpointing, bounded_memory_mb, confs)


def apply(spark, rocksdb_plan: RocksDBPlan) -> dict:
    """Set the plan's confs on the session (checked first); return the session's values after."""
    require_provider_class(spark, rocksdb_plan.provider_class, rocksdb_plan.runtime)
    for key, value in rocksdb_plan.confs.items():
        spark.conf.set(key, value)
    return {key: spark.conf.get(key) for key in rocksdb_plan.confs}


def snippets(rocksdb_plan: RocksDBPlan) -> dict[str, str]:
    """The plan's confs as copy-paste text: spark-defaults.conf, a SparkSession builder, and a
    Databricks cluster's Spark config (Compute, the cluster, Advanced options, Spark)."""
    confs = redact_conf(rocksdb_plan.confs)
    width = max(len(k) for k in confs)
    defaults = "\n".join(f"{k:<{width}}  {v}" for k, v in confs.items())
    builder = "\n".join(["from pyspark.sql import SparkSession", "", "spark = (",
                         "    SparkSession.builder"]
                        + [f"    .config({k!r}, {v!r})" for k, v in confs.items()]
                        + ["    .getOrCreate()", ")"])
    databricks = "\n".join(f"{k} {v}" for k, v in confs.items())
    return {"spark-defaults.conf": defaults, "SparkSession builder": builder,
            "Databricks cluster Spark config": databricks}


def parse_conf_lines(text: str) -> dict:
    """``key value`` lines (spark-defaults.conf, Databricks Spark config) back into a dict."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            out[key] = value.strip()
    return out


# -- 3. an existing checkpoint ---------------------------------------------------------------------
@dataclass
class PinnedReport:
    """What a checkpoint pinned, and whether the requested provider will take effect on it."""
    root: str
    requested_class: str
    pinned_provider_class: str | None  # None: no offsets entry yet, nothing pinned
    pinned_in: str | None  # "offsets/<batch>"
    pinned_class_check: ClassCheck | None
    changelog_pinned: bool | None  # None: the offsets log does not carry the flag
    changelog_newest_version: bool | None  # from the files of the newest state version (RocksDB)
    last_committed_batch_id: int | None
    offset_batch_ids: list[int]
    state_confs: dict  # pinned confs that decide how state is stored
    restart_offsets: list  # source offsets after the last committed batch (one per source)

    @property
    def pinned_matches(self) -> bool | None:
        if self.pinned_provider_class is None:
            return None
        return self.pinned_provider_class == self.requested_class

    @property
    def takes_effect(self) -> bool:
        """A provider set on the session applies only to a checkpoint that pinned nothing yet or
        pinned the same class."""
        return self.pinned_matches is not False

    @property
    def pinned_kind(self) -> str | None:
        return provider_kind(self.pinned_provider_class) if self.pinned_provider_class else None


def check_checkpoint(ckpt: Checkpoint, requested_class: str) -> PinnedReport:
    """Read what the checkpoint pinned (newest offsets entry) and compare with the request."""
    ids = ckpt.offset_batch_ids
    pinned = ckpt.pinned_conf
    pinned_class = (pinned.get(PROVIDER_CONF) or OSS_HDFS_PROVIDER) if ids else None
    changelog = pinned.get(CHANGELOG_CONF)
    state_confs = {k: v for k, v in sorted(pinned.items())
                   if any(m in k for m in STATE_CONF_MARKERS)}
    last = ckpt.last_committed_batch_id
    restart = ckpt.offsets(last).sources if last is not None else []
    return PinnedReport(
        root=ckpt.root, requested_class=requested_class, pinned_provider_class=pinned_class,
        pinned_in=f"offsets/{ids[-1]}" if ids else None,
        pinned_class_check=check_provider_class(ckpt.spark, pinned_class) if pinned_class else None,
        changelog_pinned=None if changelog is None else str(changelog).lower() == "true",
        changelog_newest_version=(ckpt.changelog_checkpointing if ids and ckpt.state_files()
                                  else None),
        last_committed_batch_id=last, offset_batch_ids=ids, state_confs=state_confs,
        restart_offsets=restart)


def checkpoint_lines(report: PinnedReport) -> list[str]:
    """The verdict on an existing checkpoint, in plain sentences."""
    if report.pinned_provider_class is None:
        return [f"{report.root} has no offsets entry yet: nothing is pinned, so the provider set "
                f"on the session ({report.requested_class}) takes effect at the first batch."]
    lines = [f"Pinned in {report.pinned_in}: {report.pinned_provider_class}"]
    check = report.pinned_class_check
    if check is not None and not check.ok:
        lines.append(f"The pinned class is NOT usable here ({check.reason}): this checkpoint "
                     "cannot start again on this Spark, whatever the session says. Start a new "
                     "checkpoint.")
    if report.pinned_matches:
        lines.append(f"Requested {report.requested_class}: the same class, so the setting is in "
                     "effect on this checkpoint.")
    else:
        lines.append(f"Requested {report.requested_class}: the setting will NOT take effect on "
                     "this checkpoint: a restart keeps the pinned provider, without an error.")
    if report.changelog_pinned is None:
        lines.append("Changelog checkpointing is not pinned in the offsets log: the session's "
                     f"{CHANGELOG_CONF} decides what the next batch writes.")
    else:
        lines.append(f"Changelog checkpointing is pinned: {str(report.changelog_pinned).lower()}.")
    if report.changelog_newest_version is not None:
        kind = "a changelog" if report.changelog_newest_version else "a snapshot (zip)"
        lines.append(f"The newest state version was written as {kind}.")
    return lines


def options_lines(report: PinnedReport) -> list[str]:
    """What to do when the requested provider will not take effect on this checkpoint."""
    if report.takes_effect and (report.pinned_class_check is None or report.pinned_class_check.ok):
        return ["Nothing to do: restart the query with the settings above."]
    last = report.last_committed_batch_id
    lines = ["Options (the provider stays pinned for the checkpoint's whole life):",
             "1. Keep this checkpoint and its provider: nothing changes; schedule the switch for a "
             "moment when starting from empty state is acceptable."]
    if last is None:
        lines.append("2. New checkpoint location with the settings above: no batch was committed "
                     "here, so start from the source's usual starting position.")
        return lines
    lines.append(f"2. New checkpoint location with the settings above, its sources starting where "
                 f"batch {last} ended (offsets/{last}):")
    for i, offset in enumerate(report.restart_offsets):
        text = json.dumps(offset, separators=(",", ":")) if isinstance(offset, (dict, list)) \
            else str(offset)
        lines.append(f"   source {i}: {text}")
    lines.append("   The new query starts with empty state: open windows and deduplication keys "
                 "within the watermark delay are forgotten. To rebuild them, start the sources "
                 "earlier (an older offsets/<batch> file; retained: "
                 f"{report.offset_batch_ids[0]}..{report.offset_batch_ids[-1]}) and let an "
                 "idempotent sink absorb the replayed rows.")
    return lines


# -- 4. demonstrations on this Spark ---------------------------------------------------------------
@dataclass
class WrongClassDemo:
    wrong_class: str
    check: ClassCheck
    start_error_class: str | None
    start_root_cause: str | None
    pinned_after_failure: str | None  # provider class in offsets/0 after the failed start
    committed_batches: list[int]
    restart_class: str
    restart_error_class: str | None
    restart_root_cause: str | None


def _start_error(spark, path: str, conf: dict) -> RunbookError | None:
    try:
        run_demo_batches(spark, WORKLOAD, path, 1, "hdfs", rows_per_batch=10, partitions=2,
                         extra_conf=conf)
    except RunbookError as error:
        return error
    return None


def demonstrate_wrong_class(spark, folder: str, wrong_class: str = WIDELY_PUBLISHED_WRONG_CLASS,
                            correct_class: str = OSS_ROCKSDB_PROVIDER) -> WrongClassDemo:
    """Set a class that does not exist, start a stateful query (it fails), read what the failed
    start pinned, then restart with the correct class (it fails again: the bad class is pinned)."""
    path = f"{folder}/wrong-class"
    first = _start_error(spark, path, {PROVIDER_CONF: wrong_class})
    ckpt = Checkpoint(spark, path, require_state=False)
    pinned = ckpt.offsets(ckpt.offset_batch_ids[0]).conf.get(PROVIDER_CONF) \
        if ckpt.offset_batch_ids else None
    committed = ckpt.commit_batch_ids
    second = _start_error(spark, path, {PROVIDER_CONF: correct_class})
    return WrongClassDemo(
        wrong_class=wrong_class, check=check_provider_class(spark, wrong_class),
        start_error_class=first.error_class if first else None,
        start_root_cause=root_cause(first.spark_error) if first else None,
        pinned_after_failure=pinned, committed_batches=committed, restart_class=correct_class,
        restart_error_class=second.error_class if second else None,
        restart_root_cause=root_cause(second.spark_error) if second else None)


def wrong_class_lines(demo: WrongClassDemo) -> list[str]:
    check = demo.check
    lines = [f"1. Checked before setting: {check.line()}",
             f"2. Set anyway and started a stateful query: "
             + (f"failed at start with [{demo.start_error_class}], caused by "
                f"{demo.start_root_cause}"
                if demo.start_error_class else "it started (unexpected on this Spark)"),
             f"3. The failed start already wrote offsets/0, pinning {demo.pinned_after_failure} "
             f"(committed batches: {demo.committed_batches or 'none'})",
             f"4. Restarted the same checkpoint with the correct class {demo.restart_class}: "
             + (f"failed again with [{demo.restart_error_class}], caused by "
                f"{demo.restart_root_cause}"
                if demo.restart_error_class else "it started")]
    return lines


def _kinds_by_version(ckpt: Checkpoint) -> dict[int, list[str]]:
    out: dict[int, set] = {}
    for f in ckpt.state_files():
        out.setdefault(f.version, set()).add(f.kind)
    return {v: sorted(k) for v, k in sorted(out.items())}


@dataclass
class RestartDemo:
    """A checkpoint restarted with a different session setting, and what the next batch wrote."""
    checkpoint_path: str
    session_conf: dict  # what the restart's session said
    pinned_before: dict  # the relevant confs pinned before the restart
    pinned_after: dict
    kinds_before: dict  # state version -> file kinds
    kinds_after: dict

    @property
    def new_versions(self) -> dict:
        return {v: k for v, k in self.kinds_after.items() if v not in self.kinds_before}


def _pinned(ckpt: Checkpoint, keys) -> dict:
    conf = ckpt.pinned_conf
    return {k: conf.get(k) for k in keys}


def demonstrate_pinned_provider(spark, folder: str, session_class: str) -> RestartDemo:
    """Write a checkpoint with the default (HDFS) provider, restart it with ``session_class`` set on
    the session, and show which files the new batch writes and which provider stays pinned."""
    path = f"{folder}/pinned-provider"
    build_demo_checkpoint(spark, WORKLOAD, path, batches=1, provider="hdfs", rows_per_batch=10,
                          partitions=2)
    ckpt = Checkpoint(spark, path)
    before, kinds_before = _pinned(ckpt, [PROVIDER_CONF]), _kinds_by_version(ckpt)
    conf = {PROVIDER_CONF: session_class}
    run_demo_batches(spark, WORKLOAD, path, 1, "hdfs", rows_per_batch=10, partitions=2,
                     extra_conf=conf)
    ckpt = Checkpoint(spark, path)  # read afresh: the restart wrote new files
    return RestartDemo(path, conf, before, _pinned(ckpt, [PROVIDER_CONF]), kinds_before,
                       _kinds_by_version(ckpt))


def demonstrate_changelog_flip(spark, checkpoint_path: str,
                               rocksdb_plan: RocksDBPlan) -> RestartDemo:
    """Restart a RocksDB checkpoint with the changelog flag flipped; show what the next batch wrote
    and whether the offsets log pinned the flag."""
    ckpt = Checkpoint(spark, checkpoint_path)
    keys = [PROVIDER_CONF, CHANGELOG_CONF]
    before, kinds_before = _pinned(ckpt, keys), _kinds_by_version(ckpt)
    flipped = not rocksdb_plan.changelog_checkpointing
    conf = {**rocksdb_plan.confs, CHANGELOG_CONF: "true" if flipped else "false"}
    run_demo_batches(spark, WORKLOAD, checkpoint_path, 1, rocksdb_plan.provider_setup,
                     rows_per_batch=10, partitions=2, extra_conf=conf)
    ckpt = Checkpoint(spark, checkpoint_path)  # read afresh: the restart wrote new files
    return RestartDemo(checkpoint_path, {CHANGELOG_CONF: conf[CHANGELOG_CONF]}, before,
                       _pinned(ckpt, keys), kinds_before, _kinds_by_version(ckpt))


def restart_lines(demo: RestartDemo) -> list[str]:
    lines = [f"session on restart: {', '.join(f'{k}={v}' for k, v in demo.session_conf.items())}"]
    for key, value in demo.pinned_after.items():
        lines.append(f"offsets log after the restart: {key} = "
                     f"{value if value is not None else '(not pinned)'}")
    for version, kinds in demo.kinds_before.items():
        lines.append(f"state version {version} (before the restart): {', '.join(kinds)}")
    for version, kinds in demo.new_versions.items():
        lines.append(f"state version {version} (written after the restart): {', '.join(kinds)}")
    return lines


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
        manager = spark._jvm.org.apache.spark.sql.execution.streaming.state.RocksDBMemoryManager
        return int(manager.getNumRocksDBInstances(True))
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


# -- 5. side-by-side measurement -------------------------------------------------------------------
@dataclass
class ProviderMeasurement:
    """One provider setup on the measurement workload."""
    provider: str
    state_rows: int
    batch_ms: float  # median trigger duration of the batches after the first
    commit_ms: float  # median state store commit time of those batches, summed over operators
    memory_bytes: int  # memoryUsedBytes of the last batch, summed over operators
    heap_bytes: int | None  # JVM heap retained after the run (after GC), local mode only
    disk_bytes: int  # every retained state file of every store
    rocksdb_metrics: dict = field(default_factory=dict)
    progress: list = field(default_factory=list)
    heap_note: str | None = None  # why the heap was not measured (jvm_unavailable)


def heap_used_after_gc(spark) -> int | None:
    """Heap used by this JVM after a full GC; None unless it holds the state (see
    :func:`jvm_unavailable`)."""
    if jvm_unavailable(spark):
        return None
    try:
        bean = spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
        bean.gc()
        return int(bean.getHeapMemoryUsage().getUsed())
    except Exception:  # noqa: BLE001 - no JVM access on some shared clusters
        return None


def unload_state_stores(spark) -> bool:
    """Close the state stores this JVM keeps loaded from earlier queries (local mode only), so that
    a heap measurement counts one run's state and not what an earlier run left or frees meanwhile.
    Spark loads them again from the checkpoint when a query needs them. Returns whether it did."""
    if jvm_unavailable(spark):
        return False
    try:
        spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
        return True
    except Exception:  # noqa: BLE001 - internal API: absent or different elsewhere
        return False


def bench_rows_per_batch(rows: int, batches: int = BENCH_BATCHES) -> int:
    """Rows per batch so that the dedup state holds ``rows`` rows after ``batches`` batches."""
    return max(2, 2 * rows // batches)


def check_benchmark_rows(rows: int) -> int:
    if not isinstance(rows, int) or isinstance(rows, bool) or (0 < rows < MIN_BENCHMARK_ROWS) \
            or rows < 0:
        raise RunbookError(f"benchmark_rows={rows!r} is not valid: use 0 to skip the measurement, "
                           f"or at least {MIN_BENCHMARK_ROWS:,} state rows")
    return rows


def measure_provider(spark, folder: str, provider: str, rows: int, batches: int = BENCH_BATCHES,
                     partitions: int = 4, extra_conf: dict | None = None) -> ProviderMeasurement:
    path = f"{folder}/bench-{provider}"
    unload_state_stores(spark)
    heap_before = heap_used_after_gc(spark)
    run = build_demo_checkpoint(spark, WORKLOAD, path, batches=batches, provider=provider,
                                rows_per_batch=bench_rows_per_batch(rows, batches),
                                partitions=partitions, extra_conf=extra_conf)
    heap_after = heap_used_after_gc(spark)
    ckpt = Checkpoint(spark, path)
    steady = run.progress[1:] or run.progress
    ops = run.last_state_operators
    return ProviderMeasurement(
        provider=provider, state_rows=sum(op["numRowsTotal"] for op in ops),
        batch_ms=statistics.median(p["durationMs"]["triggerExecution"] for p in steady),
        commit_ms=statistics.median(sum(op["commitTimeMs"] for op in p["stateOperators"])
                                    for p in steady),
        memory_bytes=sum(op["memoryUsedBytes"] for op in ops),
        heap_bytes=None if heap_before is None or heap_after is None else heap_after - heap_before,
        disk_bytes=sum(ckpt.disk_bytes(s.operator_id, s.store_name)["retained_bytes"]
                       for s in ckpt.stores()),
        rocksdb_metrics=_rocksdb_metrics(run.progress[-1]) if run.progress else {},
        progress=run.progress, heap_note=jvm_unavailable(spark))


def measure_providers(spark, folder: str, rows: int, rocksdb_plan: RocksDBPlan | None = None,
                      providers=PROVIDERS, batches: int = BENCH_BATCHES
                      ) -> list[ProviderMeasurement]:
    """The same deterministic workload on each provider setup, one after the other, in one run.

    The RocksDB setups use the plan's class and options (bounded memory included); the changelog
    flag is each setup's own."""
    check_benchmark_rows(rows)
    extra = {}
    if rocksdb_plan is not None:
        extra = {k: v for k, v in rocksdb_plan.confs.items() if k != CHANGELOG_CONF}
    out = []
    for provider in providers:
        conf = {k: v for k, v in extra.items() if provider != "hdfs"}
        out.append(measure_provider(spark, folder, provider, rows, batches, extra_conf=conf))
    return out


def benchmark_table(measurements: list[ProviderMeasurement]):
    import pandas as pd

    return pd.DataFrame([{
        "provider": m.provider, "state_rows": m.state_rows, "batch_ms": m.batch_ms,
        "commit_ms": m.commit_ms, "memoryUsedBytes": m.memory_bytes,
        "heap_retained_bytes": m.heap_bytes, "disk_bytes": m.disk_bytes,
        "rocksdbSstFileSize": m.rocksdb_metrics.get("rocksdbSstFileSize"),
        "rocksdbTotalBytesWritten": m.rocksdb_metrics.get("rocksdbTotalBytesWritten"),
    } for m in measurements]).set_index("provider")


def benchmark_summary(measurements: list[ProviderMeasurement]) -> dict:
    """The summary's ``benchmark``: ``{provider: {batch_ms, memory_bytes, heap_bytes,
    disk_bytes, ...}}``."""
    return {m.provider: {"batch_ms": m.batch_ms, "commit_ms": m.commit_ms,
                         "memory_bytes": m.memory_bytes, "heap_bytes": m.heap_bytes,
                         "disk_bytes": m.disk_bytes, "state_rows": m.state_rows}
            for m in measurements}


def _compare(a: float | None, b: float | None) -> str:
    """'about the same', 'N.Nx more', 'N.Nx less' for a vs b."""
    if a is None or b is None or a <= 0 or b <= 0:
        return "not comparable"
    ratio = a / b
    if 1 / NOISE_RATIO < ratio < NOISE_RATIO:
        return "about the same"
    return f"{ratio:.1f}x more" if ratio > 1 else f"{1 / ratio:.1f}x less"


def benchmark_verdict(measurements: list[ProviderMeasurement]) -> list[str]:
    """What this run shows and what it cannot, in sentences built from the measured figures."""
    by = {m.provider: m for m in measurements}
    hdfs = by.get("hdfs")
    lines = []
    rows = {m.state_rows for m in measurements}
    setups = ", ".join(f"{m.provider} {m.state_rows:,} rows" for m in measurements)
    lines.append(f"Same workload on every setup: {setups}"
                 + ("" if len(rows) == 1 else " (NOT equal: the comparison is void)"))
    for name in ("rocksdb", "rocksdb_changelog"):
        m = by.get(name)
        if m is None or hdfs is None:
            continue
        heap = _compare(m.heap_bytes, hdfs.heap_bytes)
        lines.append(
            f"{name} vs hdfs: JVM heap retained {heap} "
            f"({_bytes(m.heap_bytes)} vs {_bytes(hdfs.heap_bytes)}); memoryUsedBytes "
            f"{_compare(m.memory_bytes, hdfs.memory_bytes)} ({_bytes(m.memory_bytes)} vs "
            f"{_bytes(hdfs.memory_bytes)}); bytes on disk "
            f"{_compare(m.disk_bytes, hdfs.disk_bytes)} ({_bytes(m.disk_bytes)} vs "
            f"{_bytes(hdfs.disk_bytes)}); batch time "
            f"{_compare(m.batch_ms, hdfs.batch_ms)}; commit time "
            f"{_compare(m.commit_ms, hdfs.commit_ms)}.")
    rc, r = by.get("rocksdb_changelog"), by.get("rocksdb")
    if rc is not None and r is not None:
        lines.append(f"Changelog checkpointing vs full snapshots: commit time "
                     f"{_compare(rc.commit_ms, r.commit_ms)}, bytes on disk "
                     f"{_compare(rc.disk_bytes, r.disk_bytes)}.")
    rows_n = max(rows) if rows else 0
    rocks = [m for m in measurements if m.provider != "hdfs"]
    if hdfs is None or not rocks:
        pass
    elif hdfs.heap_bytes is None or any(m.heap_bytes is None for m in rocks):
        note = next((m.heap_note for m in measurements if m.heap_note), None)
        lines.append(f"The JVM heap after GC: {note}." if note else
                     "The JVM heap was not measured: only in local mode is the driver JVM the "
                     "executor that holds the state.")
    elif all(m.heap_bytes * NOISE_RATIO < hdfs.heap_bytes for m in rocks):
        lines.append(
            f"What this run shows: where the state lives. The HDFS-backed provider's state stayed "
            f"on the JVM heap ({_bytes(hdfs.heap_bytes)} retained after GC; its memoryUsedBytes "
            f"estimates those in-heap maps), RocksDB's did not ("
            + ", ".join(f"{m.provider} {_bytes(m.heap_bytes)}" for m in rocks)
            + "): RocksDB keeps state in native memory and local files.")
    else:
        lines.append("At this size the heap retained by the providers differs by less than the "
                     "noise: the state is too small to show where it lives.")
    lines.append(
        f"What it cannot show at {rows_n:,} rows on one machine: GC pauses of a many-GB heap, "
        "executor OOMs, RocksDB's block cache and memtables under memory pressure, and upload "
        "times to cloud storage; batch times this small are dominated by fixed per-batch overhead "
        "and vary from run to run. "
        + ("Run with benchmark_rows of 1,000,000 or more, or measure the real query, before "
           "deciding on speed." if rows_n < 1_000_000 else
           "Measure the real query before deciding on speed."))
    return lines


def _bytes(value: int | None) -> str:
    return "n/a" if value is None else format_bytes(value)


# -- 6. the summary --------------------------------------------------------------------------------
def work_folder() -> str:
    """A fresh folder for this runbook's demonstration checkpoints (DBFS on Databricks)."""
    return new_demo_path("enable-rocksdb")


def summarize(summary, rocksdb_plan: RocksDBPlan, applied: dict, report: PinnedReport | None,
              verification: Verification | None = None,
              measurements: list[ProviderMeasurement] | None = None) -> None:
    """Fill the summary's details and findings."""
    d = summary.details
    d["runtime"] = rocksdb_plan.runtime
    d["provider_class"] = rocksdb_plan.provider_class
    d["confs"] = redact_conf(applied)
    d["pinned_provider_class"] = report.pinned_provider_class if report else None
    d["pinned_matches"] = report.pinned_matches if report else None
    d["changelog_checkpointing_pinned"] = report.changelog_pinned if report else None
    d["changelog_checkpointing_newest_version"] = (report.changelog_newest_version if report
                                                   else None)
    d["takes_effect"] = report.takes_effect if report else True
    d["rocksdb_verified"] = verification.rocksdb_in_use if verification else None
    d["benchmark"] = benchmark_summary(measurements) if measurements else {}
    if report is not None and report.pinned_class_check is not None \
            and not report.pinned_class_check.ok:
        summary.add_finding("critical", "pinned_provider_unusable",
                            f"{report.pinned_in} pins {report.pinned_provider_class}, which is not "
                            f"usable here ({report.pinned_class_check.reason}): the query cannot "
                            "restart on this checkpoint")
    if report is not None and report.pinned_matches is False:
        summary.add_finding("warning", "pinned_provider_differs",
                            f"checkpoint pinned {report.pinned_provider_class} in "
                            f"{report.pinned_in}; "
                            f"requested {rocksdb_plan.provider_class} will not take effect on it: "
                            "start a new checkpoint to switch")
    if verification is not None and not verification.rocksdb_in_use:
        summary.add_finding("critical", "rocksdb_not_in_use",
                            "a demo stream with the requested settings did not run on RocksDB")
