"""The demo, and the demonstrations it always runs (a given checkpoint runs them only with
``demonstrations=True``): the wrong class, the pinned provider, the proof on RocksDB, the changelog
flip and the side-by-side measurement, each on its own throwaway checkpoint."""
from __future__ import annotations

from dataclasses import dataclass

from .benchmark import ProviderMeasurement, measure_providers
from .demonstrations import (
    RestartDemo,
    WrongClassDemo,
    demonstrate_changelog_flip,
    demonstrate_pinned_provider,
    demonstrate_wrong_class,
    work_folder,
)
from .verification import Verification, verify_rocksdb

# An existing query on the default provider: a deduplication with a 5 s watermark, three batches of
# 20 events on the HDFS-backed provider.
DEMO = {"workload": "dedup", "batches": 3, "rows_per_batch": 20}


@dataclass
class DemoResult:
    """What the demonstrations found, step by step."""
    wrong: WrongClassDemo  # step 2
    pinned: RestartDemo  # step 5: an HDFS checkpoint restarted with RocksDB set
    verification: Verification  # step 6
    flip: RestartDemo  # step 7: the verification's checkpoint restarted with the flag flipped
    measurements: list[ProviderMeasurement]  # step 8; empty with benchmark_rows=0


def run_demo(rb, benchmark_rows: int) -> DemoResult:
    """Every demonstration, with the plan ``rb`` prepared, in a fresh folder; the measurement
    with ``benchmark_rows`` state rows (0 skips it)."""
    spark, rocksdb_plan, folder = rb.spark, rb.prepared, work_folder()
    wrong = demonstrate_wrong_class(spark, folder)
    pinned = demonstrate_pinned_provider(spark, folder, rocksdb_plan.provider_class)
    verification = verify_rocksdb(spark, folder, rocksdb_plan)
    flip = demonstrate_changelog_flip(spark, verification.checkpoint_path, rocksdb_plan)
    measurements = (measure_providers(spark, folder, benchmark_rows, rocksdb_plan)
                    if benchmark_rows else [])
    return DemoResult(wrong, pinned, verification, flip, measurements)
