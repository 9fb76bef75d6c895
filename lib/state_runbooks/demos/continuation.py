"""A query continued on a checkpoint for a few more micro-batches, with what those batches wrote:
how a demo shows that a changed checkpoint (repartitioned, rewritten, migrated) carries on, next
to a copy that never was changed."""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import spark_errors
from state_runbooks.common.spark_settings import (
    NO_DATA_BATCHES_CONF,
    SHUFFLE_PARTITIONS_CONF,
)
from state_runbooks.session.spark_session import session_conf

from .checkpoints import provider_conf
from .transient import run_once_more_if_transient


@dataclass
class Continued:
    output: list  # the rows the continued batches wrote, sorted (as text)
    progress: list = field(default_factory=list)  # the last progress of every batch


def continue_query(spark, df, path: str, batches: int = 1, provider: str = "hdfs",
                   partitions: int = 2, mode: str = "append") -> Continued:
    """Run ``batches`` more micro-batches of ``df`` on ``path`` (one per ``availableNow`` start),
    collecting what they write (a sink that restarts from the checkpoint). The provider and
    partitions are those pinned in the checkpoint once it exists; these apply to a new one."""
    rows, progress = [], []

    def collect(batch, _batch_id):
        rows.extend(batch.collect())

    conf = {NO_DATA_BATCHES_CONF: "false",
            SHUFFLE_PARTITIONS_CONF: str(partitions), **provider_conf(provider)}
    with session_conf(spark, conf):
        for _ in range(batches):
            before = len(rows)

            def one_batch():
                del rows[before:]  # what a failed start collected goes: its batch runs again
                with spark_errors(f"running the query on {path}"):
                    query = (df.writeStream.foreachBatch(collect).outputMode(mode)
                             .option("checkpointLocation", path).trigger(availableNow=True)
                             .start())
                    query.awaitTermination()
                return query

            query = run_once_more_if_transient(spark, path, f"running the query on {path}",
                                               one_batch)
            progress.append(query.lastProgress)
    return Continued(sorted(map(repr, rows)), progress)
