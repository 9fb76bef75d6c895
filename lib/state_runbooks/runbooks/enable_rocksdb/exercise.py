"""Try it yourself: the provider a restart runs, the other way round."""
from __future__ import annotations

from state_runbooks.common.runtime import provider_kind
from state_runbooks.running.exercise import Exercise

from .verification import Verification


def try_it(verification: Verification) -> Exercise:
    """Which provider would write the next state version of step 6's RocksDB checkpoint,
    restarted with the HDFS-backed provider set on the session: the one its offsets log pins."""
    pinned = provider_kind(verification.pinned_provider_class)
    kinds = sorted({k for files in verification.kinds_by_version.values() for k in files})
    return Exercise("Step 5 restarted an HDFS-backed checkpoint with RocksDB set on the session. "
                    "Restart step 6's RocksDB checkpoint with the HDFS-backed provider set "
                    "instead: which provider writes its next state version, hdfs or rocksdb?",
                    pinned,
                    f"step 6's offsets log pins {verification.pinned_provider_class} (its state "
                    f"versions are {', '.join(kinds) or 'none'} files), and a restart takes the "
                    "provider from the offsets log, not from the session")
