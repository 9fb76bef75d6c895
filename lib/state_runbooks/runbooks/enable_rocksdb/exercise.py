"""Try it yourself: the provider a restart runs."""
from __future__ import annotations

from state_runbooks.common.runtime import provider_kind
from state_runbooks.common.spark_settings import PROVIDER_CONF
from state_runbooks.running.exercise import Exercise

from .demonstrations import RestartDemo


def try_it(pinned_demo: RestartDemo) -> Exercise:
    """Which provider wrote the batch after the restart of step 5 (RocksDB set on the session,
    the checkpoint written with the HDFS-backed provider)."""
    kinds = sorted({k for files in pinned_demo.new_versions.values() for k in files})
    pinned = provider_kind(pinned_demo.pinned_after.get(PROVIDER_CONF))
    return Exercise(f"Step 5 sets RocksDB on the session ({PROVIDER_CONF}) and restarts a "
                    "checkpoint the HDFS-backed provider wrote. "
                    "Which provider writes the restarted query's state: hdfs or rocksdb?", pinned,
                    f"the newest offsets entry still pins {pinned}, and the new state version's "
                    f"files are {', '.join(kinds) or 'none'}")
