"""Deterministic demo checkpoints, written by real streaming queries on ``rate-micro-batch``.

``rate-micro-batch`` produces the same rows in every run: batch ``b`` holds values
``b*rows_per_batch ... (b+1)*rows_per_batch - 1`` with event time ``DEMO_START + b seconds``. Each
start with ``trigger(availableNow=True)`` runs exactly one micro-batch (no-data batches are switched
off for the demo), so ``batches=N`` means N batches and every output is reproducible.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.runtime import is_databricks, provider_classes
from state_runbooks.common.spark_settings import (
    CHANGELOG_CONF,
    JOIN_FORMAT_CONF,
    NO_DATA_BATCHES_CONF,
    PROVIDER_CONF,
    SHUFFLE_PARTITIONS_CONF,
    SOURCE_EVOLUTION_CONF,
)
from state_runbooks.session.spark_session import session_conf

from .jobs import files_per_window
from .local_writes import local_write_conf
from .transient import run_once_more_if_transient

# 2023-11-14 22:13:20 UTC. Not epoch 0: with a watermark, rows whose event time is exactly
# 1970-01-01 00:00:00 count as late in the first batch and never reach the state.
DEMO_START_MS = 1_700_000_000_000

WORKLOADS = ("dedup", "window_agg", "join", "two_operators", "join_left_outer", "join_composite",
             "window_agg_many_users", "dedup_within_watermark", "join_v3", "session_window",
             "pandas_with_state", "transform_with_state", "limit", "composite_agg",
             "transform_with_state_pandas", "files_window_agg")
# Fed by files: each batch's input one more file beside the checkpoint, written before it runs.
FILE_WORKLOADS = ("files_window_agg",)
# Workloads whose state only Spark's RocksDB provider can keep: with provider "hdfs" they run on
# "rocksdb" (DemoRun.provider says which ran).
ROCKSDB_ONLY_WORKLOADS = ("join_v3", "transform_with_state", "transform_with_state_pandas")
# Session confs a workload needs beyond the provider's.
WORKLOAD_CONF = {"join_v3": {JOIN_FORMAT_CONF: "3"}}
# Output modes other than append: an aggregation without a watermark cannot run in append mode.
WORKLOAD_OUTPUT_MODE = {"composite_agg": "update"}
AMOUNT_BUCKET = 25  # composite_agg: amounts grouped in buckets of this width
SESSION_GAP_SECONDS = 2  # session_window: a user idle longer than this closes its session
TIMEOUT_SECONDS = 3  # pandas_with_state / transform_with_state: a key idle this long expires
LIMIT_ROWS = 50  # limit: the streaming limit
PROVIDERS = ("hdfs", "rocksdb", "rocksdb_changelog")

# The join demo (orders and payments, as in a widely read tutorial), in seconds of event time. Each
# batch is 1 s of event time, so with these values a row that never finds its match is evicted by
# the watermark 7 batches after it arrived (2 s watermark delay + 3 s bound + the watermark lagging
# one batch behind the data it was computed from).
JOIN_WATERMARK_SECONDS = 2
JOIN_LOWER_BOUND_SECONDS = 3  # order_time >= payment_time - 3 s
JOIN_UPPER_BOUND_SECONDS = 3  # order_time <= payment_time + 3 s
JOIN_PAYMENT_EARLY_BATCHES = 2  # case 1: the payment arrives this many batches before its order
JOIN_PAYMENT_LATE_SECONDS = 8  # case 2: payment_time this far after order_time (outside bounds)
JOIN_PAYMENT_BEHIND_SECONDS = 30  # case 3: payment_time this far behind: dropped as late
JOIN_DEMO_BATCHES = 8  # enough batches for the watermark to evict the first batch's rows
# What each ``value % 10`` of the join demo builds (see ``orders_and_payments``).
JOIN_CASES = {
    0: "payment_for_missing_order",
    1: "payment_before_order",
    2: "payment_outside_time_range",
    3: "order_filtered_payment_late",
    4: "payment_for_next_order",
    5: "two_payments",
    6: "wrong_customer",
    7: "normal", 8: "normal", 9: "normal",
}


@dataclass
class DemoRun:
    """A demo checkpoint and what its query reported."""
    checkpoint_path: str
    workload: str
    provider: str
    batches: int
    rows_per_batch: int
    partitions: int
    progress: list = field(default_factory=list)  # query.lastProgress of every batch
    # Session settings it was written with beyond the provider's (named sources, row checksums):
    # a restart builds the query with them again.
    extra_conf: dict = field(default_factory=dict)

    @property
    def last_state_operators(self) -> list[dict]:
        return self.progress[-1]["stateOperators"] if self.progress else []


def provider_conf(provider: str, runtime: str = "auto") -> dict[str, str]:
    """Session confs that select one provider setup: ``hdfs``, ``rocksdb``, ``rocksdb_changelog``."""
    if provider not in PROVIDERS:
        raise RunbookError(f"provider {provider!r} is not known: use one of {', '.join(PROVIDERS)}")
    classes = provider_classes(runtime)
    if provider == "hdfs":
        return {PROVIDER_CONF: classes.hdfs}
    return {PROVIDER_CONF: classes.rocksdb,
            CHANGELOG_CONF: "true" if provider == "rocksdb_changelog" else "false"}


def _rate(spark, rows_per_batch: int, start_ms: int = DEMO_START_MS, name: str = "events"):
    """The demo's source; named ``name`` where the session turns on source evolution (Spark then
    requires every source to be named, and logs offsets in format 2)."""
    reader = (spark.readStream.format("rate-micro-batch")
              .option("rowsPerBatch", rows_per_batch)
              .option("numPartitions", 1)
              .option("startTimestamp", start_ms)
              .option("advanceMillisPerBatch", 1000))
    if str(spark.conf.get(SOURCE_EVOLUTION_CONF, "false")).lower() == "true":
        reader = reader.name(name)
    return reader.load()


def _events(spark, rows_per_batch: int, users: int = 5, name: str = "events"):
    """Events where every event_id arrives twice in its batch (something to deduplicate), from
    ``users`` users; the source is named ``name`` where sources are named."""
    from pyspark.sql import functions as F
    return _rate(spark, rows_per_batch, name=name).select(
        F.concat(F.lit("evt-"), (F.col("value") / 2).cast("long").cast("string")).alias("event_id"),
        F.concat(F.lit("user-"), (F.col("value") % users).cast("string")).alias("user_id"),
        (F.col("value") % 100).cast("double").alias("amount"),
        F.col("timestamp").alias("event_time"),
    ).withWatermark("event_time", "5 seconds")


def _dedup(df):
    return df.dropDuplicates(["event_id", "event_time"])


def _window_agg(df):
    from pyspark.sql import functions as F
    return (df.groupBy(F.window("event_time", "3 seconds"), "user_id")
            .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))


def orders_and_payments(spark, rows_per_batch: int):
    """Orders and payments streams with the usual mismatch cases built in, by ``value % 10``
    (``JOIN_CASES``); the order ``ord-<v>`` and the payment ``pay-<v>`` come from the same value ``v``:

    - 0: the payment names an order that does not exist (``missing-<v>``); order ``ord-<v>`` never
      gets a payment.
    - 1: the payment is for an order that arrives ``JOIN_PAYMENT_EARLY_BATCHES`` batches later.
    - 2: the payment time is ``JOIN_PAYMENT_LATE_SECONDS`` after the order: outside the time bounds.
    - 3: an upstream filter drops the order before the join, and the payment's time is
      ``JOIN_PAYMENT_BEHIND_SECONDS`` behind: the join drops it as late (except in the first batch,
      whose watermark is still 0: there it enters the state and is evicted in the next batch).
    - 4: a second (split) payment for order ``ord-<v+1>``; order ``ord-<v>`` gets no payment.
    - 5: the order gets its own payment and the split one: two payment rows for one key.
    - 6: a normal payment that carries the wrong ``customer_id``: it joins on ``order_id`` alone, and
      does not on the composite key (``order_id``, ``customer_id``) of ``join_composite``.
    - 7..9: a normal payment at the order's time: joins.
    """
    from pyspark.sql import functions as F
    v = F.col("value")
    orders = _rate(spark, rows_per_batch, name="orders").where(v % 10 != 3).select(
        F.concat(F.lit("ord-"), v.cast("string")).alias("order_id"),
        F.concat(F.lit("cust-"), (v % 5).cast("string")).alias("customer_id"),
        ((v * 37) % 1000 / 10.0).alias("amount"),
        F.col("timestamp").alias("order_time"),
    ).withWatermark("order_time", f"{JOIN_WATERMARK_SECONDS} seconds")
    case = v % 10
    # The order number each payment is for (case 0 names an order that does not exist).
    target = (F.when(case == 1, v + JOIN_PAYMENT_EARLY_BATCHES * rows_per_batch)
              .when(case == 4, v + 1).otherwise(v))
    customer = F.when(case == 6, (target + 1) % 5).otherwise(target % 5)
    payments = _rate(spark, rows_per_batch, name="payments").select(
        F.concat(F.lit("pay-"), v.cast("string")).alias("payment_id"),
        F.when(case == 0, F.concat(F.lit("missing-"), v.cast("string")))
         .otherwise(F.concat(F.lit("ord-"), target.cast("string"))).alias("order_id"),
        F.concat(F.lit("cust-"), customer.cast("string")).alias("customer_id"),
        ((v * 53) % 1000 / 10.0).alias("payment_amount"),
        F.when(case == 2, F.col("timestamp") + F.expr(f"INTERVAL {JOIN_PAYMENT_LATE_SECONDS} SECONDS"))
         .when(case == 3, F.col("timestamp") - F.expr(f"INTERVAL {JOIN_PAYMENT_BEHIND_SECONDS} SECONDS"))
         .otherwise(F.col("timestamp")).alias("payment_time"),
    ).withWatermark("payment_time", f"{JOIN_WATERMARK_SECONDS} seconds")
    return orders, payments


def join_demo_key(case: str, batch: int, rows_per_batch: int = 20, payment: bool = False,
                  nth: int = 0) -> str:
    """The join key the join demo builds for a case (a value of ``JOIN_CASES``) in a batch: the
    order's ``order_id`` (``ord-<v>``), or with ``payment=True`` the ``order_id`` its payment
    carries. ``nth``: which of the batch's values with that case (0: the first)."""
    codes = [c for c, name in JOIN_CASES.items() if name == case]
    if not codes:
        raise RunbookError(f"join demo case {case!r} is not known: use one of "
                           f"{', '.join(dict.fromkeys(JOIN_CASES.values()))}")
    v = batch * rows_per_batch + 10 * nth + codes[0]
    if not payment:
        return f"ord-{v}"
    code = v % 10
    if code == 0:
        return f"missing-{v}"
    if code == 1:
        return f"ord-{v + JOIN_PAYMENT_EARLY_BATCHES * rows_per_batch}"
    if code == 4:
        return f"ord-{v + 1}"
    return f"ord-{v}"


def _join(spark, rows_per_batch: int, how: str = "inner", composite: bool = False):
    from pyspark.sql import functions as F
    orders, payments = orders_and_payments(spark, rows_per_batch)
    keys = "o.order_id = p.order_id AND " + ("o.customer_id = p.customer_id AND " if composite
                                             else "")
    condition = F.expr(
        keys +
        f"o.order_time >= p.payment_time - INTERVAL {JOIN_LOWER_BOUND_SECONDS} SECONDS AND "
        f"o.order_time <= p.payment_time + INTERVAL {JOIN_UPPER_BOUND_SECONDS} SECONDS")
    return orders.alias("o").join(payments.alias("p"), condition, how).select(
        "o.order_id", "o.customer_id", "o.amount", "o.order_time", "p.payment_id",
        "p.payment_amount", "p.payment_time")


def _users(spark, rows_per_batch: int, users: int = 5):
    """``user_id`` (``user-<n>``), ``event_id``, ``amount``, ``event_time`` and the batch number
    ``second`` (event time in seconds since ``DEMO_START_MS``), with a 5-second watermark."""
    from pyspark.sql import functions as F
    return _rate(spark, rows_per_batch).select(
        (F.col("value") % users).alias("user"),
        F.concat(F.lit("user-"), (F.col("value") % users).cast("string")).alias("user_id"),
        F.concat(F.lit("evt-"), F.col("value").cast("string")).alias("event_id"),
        (F.col("value") % 100).alias("amount"),
        ((F.unix_millis("timestamp") - F.lit(DEMO_START_MS)) / 1000).cast("long").alias("second"),
        F.col("timestamp").alias("event_time"),
    ).withWatermark("event_time", "5 seconds")


def _session_window(spark, rows_per_batch: int):
    """Per-user sessions: each user is active in 2 batches out of 4, so a session closes after
    ``SESSION_GAP_SECONDS`` of silence and the next one opens 2 batches later."""
    from pyspark.sql import functions as F
    events = _users(spark, rows_per_batch).where((F.col("second") + F.col("user")) % 4 < 2)
    return (events.groupBy(F.session_window("event_time", f"{SESSION_GAP_SECONDS} seconds"),
                           "user_id")
            .agg(F.count("*").alias("events")))


def _idle_users(spark, rows_per_batch: int):
    """Users 0-2 send events every batch; users 3 and 4 stop after batch 1, so their keys time out
    (``TIMEOUT_SECONDS`` of event time without events)."""
    from pyspark.sql import functions as F
    return _users(spark, rows_per_batch).where((F.col("user") < 3) | (F.col("second") < 2))


def _count_with_event_time_timeout(key, frames, state):
    """applyInPandasWithState: events per user; a user idle for ``TIMEOUT_SECONDS`` of event time
    times out and is removed. Event-time timeouts fire on the watermark, so the demo needs no
    processing-time (and no no-data) batches."""
    import pandas as pd
    if state.hasTimedOut:
        (events,) = state.get
        state.remove()
        yield pd.DataFrame({"user_id": [key[0]], "events": [events], "expired": [True]})
        return
    events = state.get[0] if state.exists else 0
    newest_ms = 0
    for frame in frames:
        events += len(frame)
        newest_ms = max(newest_ms, int(frame["event_time"].max().timestamp() * 1000))
    state.update((events,))
    state.setTimeoutTimestamp(newest_ms + TIMEOUT_SECONDS * 1000)
    yield pd.DataFrame({"user_id": [key[0]], "events": [events], "expired": [False]})


def _ship_to_workers(*modules) -> None:
    """Pickle the Python functions and classes of ``modules`` by value, so that Python workers
    run them without this package installed (local mode's workers may use another interpreter;
    a cluster's executors do not have it)."""
    from pyspark import cloudpickle
    for module in modules:
        cloudpickle.register_pickle_by_value(module)


def _pandas_with_state(spark, rows_per_batch: int):
    import sys

    from pyspark.sql.streaming.state import GroupStateTimeout
    _ship_to_workers(sys.modules[__name__])
    return (_idle_users(spark, rows_per_batch).select("user_id", "event_time")
            .groupBy("user_id")
            .applyInPandasWithState(_count_with_event_time_timeout,
                                    "user_id string, events long, expired boolean",
                                    "events long", "append", GroupStateTimeout.EventTimeTimeout))


def _transform_with_state(spark, rows_per_batch: int):
    """transformWithState with a value (with TTL), a list and a map variable and a processing-time
    timer per user (see ``UserActivity``)."""
    from state_runbooks.demos import processor as demo_processor

    from .processor import UserActivity
    _ship_to_workers(demo_processor)
    return (_idle_users(spark, rows_per_batch).select("user_id", "event_id", "amount",
                                                      "event_time")
            .groupBy("user_id")
            .transformWithState(UserActivity(), "user_id string, events long", "Append",
                                "ProcessingTime"))


def _composite_agg(spark, rows_per_batch: int):
    """Events per user and amount bucket (``amount // AMOUNT_BUCKET``): a two-column key with no
    event time and no watermark, so nothing ever evicts a key."""
    from pyspark.sql import functions as F
    v = F.col("value")
    return (_rate(spark, rows_per_batch)
            .select(F.concat(F.lit("user-"), (v % 5).cast("string")).alias("user_id"),
                    ((v % 100) / AMOUNT_BUCKET).cast("int").alias("amount_bucket"))
            .groupBy("user_id", "amount_bucket").count())


def _transform_with_state_pandas(spark, rows_per_batch: int):
    """transformWithStateInPandas with a value and a list variable per user, no timers (see
    ``UserTotals``)."""
    from state_runbooks.demos import processor as demo_processor

    from .processor import UserTotals
    _ship_to_workers(demo_processor)
    return (_idle_users(spark, rows_per_batch).select("user_id", "event_id", "amount")
            .groupBy("user_id")
            .transformWithStateInPandas(UserTotals(), "user_id string, events long", "Append",
                                        "None"))


def demo_query(spark, workload: str, rows_per_batch: int, folder: str = ""):
    """The streaming DataFrame of a demo workload (run in append mode, or in the workload's
    ``WORKLOAD_OUTPUT_MODE``); ``folder``: a file-fed workload's input folder."""
    if workload == "files_window_agg":
        return files_per_window.counts(files_per_window.events(spark, folder))
    if workload == "dedup":
        return _dedup(_events(spark, rows_per_batch))
    if workload == "window_agg":
        return _window_agg(_events(spark, rows_per_batch))
    if workload == "two_operators":
        return _window_agg(_dedup(_events(spark, rows_per_batch)))
    if workload == "join":
        return _join(spark, rows_per_batch)
    if workload == "join_left_outer":
        return _join(spark, rows_per_batch, how="left_outer")
    if workload == "join_composite":
        return _join(spark, rows_per_batch, composite=True)
    if workload == "window_agg_many_users":
        # One user per two events of a batch: the state holds a row per user and open window, and
        # every batch of a 3 s window updates the same keys again.
        return _window_agg(_events(spark, rows_per_batch, users=max(5, rows_per_batch // 2)))
    if workload == "dedup_within_watermark":
        return _events(spark, rows_per_batch).dropDuplicatesWithinWatermark(["event_id"])
    if workload == "join_v3":
        return _join(spark, rows_per_batch)
    if workload == "session_window":
        return _session_window(spark, rows_per_batch)
    if workload == "pandas_with_state":
        return _pandas_with_state(spark, rows_per_batch)
    if workload == "transform_with_state":
        return _transform_with_state(spark, rows_per_batch)
    if workload == "limit":
        return _rate(spark, rows_per_batch).limit(LIMIT_ROWS)
    if workload == "composite_agg":
        return _composite_agg(spark, rows_per_batch)
    if workload == "transform_with_state_pandas":
        return _transform_with_state_pandas(spark, rows_per_batch)
    raise RunbookError(f"demo workload {workload!r} is not known: use one of {', '.join(WORKLOADS)}")


DEMO_FOLDER_PREFIX = "state-runbooks-demo-"
# Written into every demo folder with the id of the process that made it: only folders carrying it
# are ever removed, so nothing else in the temporary folder is touched.
DEMO_FOLDER_MARKER = ".state-runbooks-demo"
_made_here: list[str] = []


def new_demo_folder() -> str:
    """A fresh local folder for demo files, in the temporary folder. It is removed when this process
    (the notebook's kernel) exits; folders left by processes that ended without removing theirs (a
    killed kernel) are removed first, so demo folders do not pile up."""
    remove_orphaned_demo_folders()
    folder = tempfile.mkdtemp(prefix=DEMO_FOLDER_PREFIX)
    with open(os.path.join(folder, DEMO_FOLDER_MARKER), "w", encoding="utf-8") as marker:
        marker.write(f"{os.getpid()}\n")
    if not _made_here:
        atexit.register(_remove_made_here)
    _made_here.append(folder)
    return folder


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return True


def remove_orphaned_demo_folders(parent: str | None = None) -> list[str]:
    """Remove the demo folders in ``parent`` (default: the temporary folder) whose marker names a
    process that no longer runs; returns them. Folders without a readable marker stay."""
    parent = parent or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        folder = os.path.join(parent, name)
        if not name.startswith(DEMO_FOLDER_PREFIX) or os.path.islink(folder):
            continue
        try:
            with open(os.path.join(folder, DEMO_FOLDER_MARKER), encoding="utf-8") as marker:
                pid = int(marker.read().strip())
        except (OSError, ValueError):
            continue
        if not _process_runs(pid):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _remove_made_here() -> None:
    for folder in _made_here:
        shutil.rmtree(folder, ignore_errors=True)


def new_demo_path(workload: str) -> str:
    """A fresh checkpoint location: in a new demo folder (see :func:`new_demo_folder`), or on DBFS on
    Databricks (the executors must see the checkpoint, and a driver's /tmp is not shared)."""
    if is_databricks():
        return f"dbfs:/tmp/state-runbooks-demo/{workload}-{uuid.uuid4().hex[:8]}"
    return os.path.join(new_demo_folder(), workload)


def demo_provider(workload: str, provider: str) -> str:
    """The provider a workload runs on: ``provider``, except ``hdfs`` becomes ``rocksdb`` for the
    workloads only RocksDB can keep (``ROCKSDB_ONLY_WORKLOADS``)."""
    if provider == "hdfs" and workload in ROCKSDB_ONLY_WORKLOADS:
        return "rocksdb"
    return provider


def run_demo_batches(spark, workload: str, checkpoint_path: str, batches: int,
                     provider: str = "hdfs", rows_per_batch: int = 20, partitions: int = 4,
                     extra_conf: dict[str, str] | None = None) -> list[dict]:
    """Run ``batches`` more micro-batches of a demo query on ``checkpoint_path``; return progress.

    On an existing checkpoint the query continues where it stopped, exactly as a restarted
    production query would (provider and partitions are then the ones pinned in the checkpoint).
    """
    if batches < 1:
        raise RunbookError(f"batches must be at least 1, got {batches}")
    conf = {SHUFFLE_PARTITIONS_CONF: str(partitions),
            NO_DATA_BATCHES_CONF: "false",
            **provider_conf(demo_provider(workload, provider)), **WORKLOAD_CONF.get(workload, {}),
            **(extra_conf or {})}
    progress = []
    folder = (files_per_window.prepared_input_folder(checkpoint_path)
              if workload in FILE_WORKLOADS else "")
    with session_conf(spark, conf):
        df = demo_query(spark, workload, rows_per_batch, folder)
        what = f"running demo query {workload} on {checkpoint_path}"

        def one_batch():
            with spark_errors(what):
                query = (df.writeStream.format("noop")
                         .outputMode(WORKLOAD_OUTPUT_MODE.get(workload, "append"))
                         .option("checkpointLocation", checkpoint_path)
                         .trigger(availableNow=True).start())
                query.awaitTermination()
            return query

        for _ in range(batches):
            if folder:
                files_per_window.write_next_file(folder, rows_per_batch)
            query = run_once_more_if_transient(spark, checkpoint_path, what, one_batch)
            if query.lastProgress:
                progress.append(query.lastProgress)
    return progress


def build_demo_checkpoint(spark, workload: str = "two_operators", checkpoint_path: str = "",
                          batches: int = 6, provider: str = "hdfs", rows_per_batch: int = 20,
                          partitions: int = 4, extra_conf: dict[str, str] | None = None) -> DemoRun:
    """Write a new demo checkpoint of ``batches`` micro-batches and return where it is."""
    if workload not in WORKLOADS:
        raise RunbookError(f"demo workload {workload!r} is not known: use one of "
                           f"{', '.join(WORKLOADS)}")
    path = checkpoint_path or new_demo_path(workload)
    progress = run_demo_batches(spark, workload, path, batches, provider, rows_per_batch,
                                partitions, {**local_write_conf(spark, path), **(extra_conf or {})})
    return DemoRun(path, workload, demo_provider(workload, provider), batches, rows_per_batch,
                   partitions, progress, dict(extra_conf or {}))
