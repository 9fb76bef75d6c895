"""Bytes, files and snapshot lag per state partition, of many checkpoints at once, as one Spark
job over their folders: Spark lists the folders (spread over the executors when there are more
than ``spark.sql.sources.parallelPartitionDiscovery.threshold``, one listing task per core) and
sums the files of each partition: one row per partition comes back, and no figure waits on a
listing made from the driver. The same figures from a listing the driver already holds:
:func:`layout_partitions`; both summed by :func:`partition_figures`.

Only names and sizes are read (Spark's ``binaryFile`` source reads no content unless asked). A
file a running query removes between Spark's listing and its read is skipped
(``ignoreMissingFiles``): figures of a query that is running are of a moment, as any listing's.
"""
from __future__ import annotations

from collections.abc import Iterable

from state_runbooks.common.errors import spark_errors
from state_runbooks.common.spark_settings import (
    MAX_PARTITION_BYTES_CONF,
    OPEN_COST_CONF,
    PARALLEL_DISCOVERY_TASKS_CONF,
)
from state_runbooks.session.spark_session import is_connect, session_conf

from .state_files import DEFAULT_STORE, OTHER_FOLDERS, SNAPSHOT_KINDS, STATE_FILE_PATTERN

# A file of a state partition, by its full path: the checkpoint's root (1), operator (2),
# partition (3), store folder (4, none for the default store), then a state file's version (5),
# unique id (6) and kind (7), or a file in the partition's SSTs/ or _metadata/ (5-7 empty). The
# state file names are state_files' own pattern: one grammar for the driver and for Spark.
PARTITION_FILE = (r"^(.*)/state/(\d+)/(\d+)/(?:([^/]+)/)?(?:"
                  + STATE_FILE_PATTERN.pattern.strip("^$")
                  + "|(?:" + "|".join(OTHER_FOLDERS) + ")/[^/]+)$")
# Characters Spark reads as a glob in a path it loads: a root holding one is left to the driver.
GLOB_CHARACTERS = frozenset("*?[]{}\\")
# Spark's default is a listing task per folder: each pays a task's fixed cost (200 small
# checkpoints on 2 cores: 1.5 s, against 0.8 s with a task a core).
LISTING_TASKS_PER_CORE = 1
# No file's content is read, so the scan is spread over the cores, not by bytes or files: Spark's
# packing then gives each task an equal share of the bytes, a task a core (by default each file
# counts 4 MB: 2,000 small files made 63 tasks, each paying a task's fixed cost).
NO_CONTENT_SCAN_CONF = {OPEN_COST_CONF: "0", MAX_PARTITION_BYTES_CONF: str(2 ** 62)}


def partition_figures(partitions: Iterable[dict]) -> dict:
    """A checkpoint's file figures from its partitions (each: ``bytes``, ``files`` (state files),
    ``newest`` version and newest ``snapshot`` version): totals, the largest partition, and the
    largest snapshot lag (versions a load replays since the newest snapshot)."""
    parts = list(partitions)
    return {"bytes": sum(p["bytes"] for p in parts),
            "files": sum(p["files"] for p in parts),
            "max_files_per_partition": max((p["files"] for p in parts), default=0),
            "max_bytes_per_partition": max((p["bytes"] for p in parts), default=0),
            "max_snapshot_lag": max((p["newest"] - p["snapshot"] for p in parts), default=0)}


def layout_partitions(layout) -> list[dict]:
    """The partitions of a :class:`~.state_files.StateLayout` (a listing the driver holds), as
    :func:`spark_partitions` gives them: state files, and the bytes of SSTs/ and _metadata/ too."""
    parts: dict[tuple, dict] = {}

    def part(key: tuple) -> dict:
        return parts.setdefault(key, {"operator_id": key[0], "partition_id": key[1],
                                      "store_name": key[2], "bytes": 0, "files": 0, "newest": 0,
                                      "snapshot": 0})

    for f in layout.files:
        p = part((f.operator_id, f.partition_id, f.store_name))
        p["bytes"] += f.size
        p["files"] += 1
        p["newest"] = max(p["newest"], f.version)
        if f.kind in SNAPSHOT_KINDS:
            p["snapshot"] = max(p["snapshot"], f.version)
    for key, size in layout.other_bytes.items():
        part(key)["bytes"] += size
    return list(parts.values())


def _job_conf(spark) -> dict:
    """A scan a task a core, and one listing task per core of a classic session (Spark's own
    default on Spark Connect, a task per folder up to 10,000: this side has no core count)."""
    if is_connect(spark):
        return dict(NO_CONTENT_SCAN_CONF)
    cores = spark.sparkContext.defaultParallelism
    return {**NO_CONTENT_SCAN_CONF,
            PARALLEL_DISCOVERY_TASKS_CONF: str(max(LISTING_TASKS_PER_CORE * cores, 1))}


def spark_partitions(spark, roots: list[str]) -> dict[str, list[dict]]:
    """Every partition of the checkpoints at ``roots`` (full URIs, as the file systems qualify
    them), by root, from one Spark job; a root whose name Spark would read as a glob is left out
    (its caller counts it from its own listing), as is one without state files."""
    from pyspark.sql import functions as F

    loadable = [r for r in roots if not GLOB_CHARACTERS & set(r)]
    if not loadable:
        return {}

    def group(i: int):
        return F.regexp_extract("path", PARTITION_FILE, i)

    version = group(5)
    # Classic sessions list the folders when the read is made, Connect when it runs: the conf
    # covers both.
    with session_conf(spark, _job_conf(spark)), spark_errors("counting the state files"):
        files = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
                 .option("ignoreMissingFiles", "true").load(loadable)
                 .select(group(1).alias("root"), group(2).alias("operator"),
                         group(3).alias("partition"), group(4).alias("store"),
                         F.when(version != "", version.cast("long")).alias("version"),
                         group(7).alias("kind"), "length")
                 .where(F.col("root") != ""))
        rows = files.groupBy("root", "operator", "partition", "store").agg(
            F.sum("length").alias("bytes"),
            F.count("version").alias("files"),
            F.coalesce(F.max("version"), F.lit(0)).alias("newest"),
            F.coalesce(F.max(F.when(F.col("kind").isin(*SNAPSHOT_KINDS), F.col("version"))),
                       F.lit(0)).alias("snapshot")).collect()
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(row["root"], []).append(
            {"operator_id": int(row["operator"]), "partition_id": int(row["partition"]),
             "store_name": row["store"] or DEFAULT_STORE, "bytes": int(row["bytes"]),
             "files": int(row["files"]), "newest": int(row["newest"]),
             "snapshot": int(row["snapshot"])})
    return out
