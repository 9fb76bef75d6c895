"""The provider class and the plan: whether a class is a usable ``StateStoreProvider`` here, and
the confs that set RocksDB on the session (checked first, then applied, and as copy-paste text).

``spark.conf.set`` accepts any class name, and a class that does not exist fails only when a
stateful query starts: hence :func:`check_provider_class` before anything is set. On Spark Connect
there is no JVM on this side, so Spark itself is asked, through a one-row stateful query on a
scratch checkpoint (:func:`probe_provider_class`).
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError, first_line, root_cause
from state_runbooks.common.redaction import redact_conf
from state_runbooks.common.runtime import (
    DATABRICKS_ROCKSDB_PROVIDER,
    OSS_ROCKSDB_PROVIDER,
    detect_runtime,
    provider_classes,
)
from state_runbooks.common.spark_settings import (
    BOUNDED_MEMORY_CONF,
    CHANGELOG_CONF,
    MAX_MEMORY_MB_CONF,
    PROVIDER_CONF,
)
from state_runbooks.core.spark_internals import spark_class
from state_runbooks.demos.checkpoints import new_demo_path, run_demo_batches
from state_runbooks.session.spark_session import is_connect

# A class name commonly published for RocksDB (in guides and snippets). It is not a class anywhere.
WIDELY_PUBLISHED_WRONG_CLASS = "com.databricks.sql.streaming.state.RocksDBStateProvider"
STATE_STORE_PROVIDER_BASE = "org.apache.spark.sql.execution.streaming.state.StateStoreProvider"
KNOWN_ROCKSDB_CLASSES = (OSS_ROCKSDB_PROVIDER, DATABRICKS_ROCKSDB_PROVIDER)

# Demo and measurement workload: a deduplication with a 5 s watermark; every id arrives twice
# per batch, and with up to 6 batches nothing is evicted yet, so the state holds rows_per_batch / 2
# rows per batch.
WORKLOAD = "dedup"


# -- the class -------------------------------------------------------------------------------------
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
    try:
        cls = spark_class(spark, name)
    except Exception as exc:  # noqa: BLE001 - Py4J wraps ClassNotFoundException and friends
        java = getattr(exc, "java_exception", None)
        reason = str(java.getClass().getName()) if java is not None else first_line(exc)
        return ClassCheck(name, False, False, reason)
    base = spark_class(spark, STATE_STORE_PROVIDER_BASE)
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


def _start_error(spark, path: str, conf: dict) -> RunbookError | None:
    try:
        run_demo_batches(spark, WORKLOAD, path, 1, "hdfs", rows_per_batch=10, partitions=2,
                         extra_conf=conf)
    except RunbookError as error:
        return error
    return None


# -- the plan and the session ----------------------------------------------------------------------
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
    cluster's Spark config as ``key value`` lines, named for Databricks (Compute, the cluster,
    Advanced options, Spark) only where the plan is for its runtime and carries its class."""
    confs = redact_conf(rocksdb_plan.confs)
    width = max(len(k) for k in confs)
    defaults = "\n".join(f"{k:<{width}}  {v}" for k, v in confs.items())
    builder = "\n".join(["from pyspark.sql import SparkSession", "", "spark = (",
                         "    SparkSession.builder"]
                        + [f"    .config({k!r}, {v!r})" for k, v in confs.items()]
                        + ["    .getOrCreate()", ")"])
    lines = "\n".join(f"{k} {v}" for k, v in confs.items())
    cluster = ("Databricks cluster Spark config" if rocksdb_plan.runtime == "databricks" else
               "a cluster's Spark config, key value lines (open-source Spark)")
    return {"spark-defaults.conf": defaults, "SparkSession builder": builder, cluster: lines}


def parse_conf_lines(text: str) -> dict:
    """``key value`` lines (spark-defaults.conf, Databricks Spark config) back into a dict."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            out[key] = value.strip()
    return out
