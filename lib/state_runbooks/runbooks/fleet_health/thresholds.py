"""The fleet's thresholds: a default for each, overridable by a YAML or JSON mapping (the
``thresholds`` parameter), each refused in one line when it is not a known name or a number."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import yaml

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.state_limits import HDFS_STATE_ROWS
from state_runbooks.core.store_scan import SKEW_WARNING_RATIO


@dataclass(frozen=True)
class Thresholds:
    # A query whose last commit is older than this, and that is not active, has stalled or
    # stopped: a scheduled query is expected to commit at least daily.
    max_age_hours: float = 24.0
    # Rows of one checkpoint's state: beyond this the HDFS-backed provider holds it on the
    # executors' heap (core/state_limits.py), and 02 estimates what it costs.
    max_rows: int = HDFS_STATE_ROWS
    # Growth of the rows per day since the previous run, as a share of the previous rows.
    max_growth_per_day: float = 0.5
    # Rows of the fullest partition over the mean (03's skew ratio).
    max_skew: float = SKEW_WARNING_RATIO
    # State files in one partition's folder: many small files slow every load and listing.
    max_files_per_partition: int = 1_000
    # Versions since the newest snapshot of a partition: a load replays that many deltas or
    # changelogs (maintenance writes a snapshot every minDeltasForSnapshot, 10 by default).
    max_snapshot_lag: int = 50
    # Bytes of one checkpoint's state files on storage.
    max_bytes: int = 50 * 1024 ** 3


def load_thresholds(given=None) -> Thresholds:
    """The defaults, with what ``given`` overrides: a mapping, or its YAML or JSON text (JSON is
    YAML); empty or None: the defaults."""
    if given is None or (isinstance(given, str) and not given.strip()):
        return Thresholds()
    mapping = given
    if isinstance(given, str):
        try:
            mapping = yaml.safe_load(given)
        except yaml.YAMLError as exc:
            raise RunbookError(f"thresholds is neither YAML nor JSON: {str(exc).splitlines()[0]}")
    if not isinstance(mapping, dict):
        raise RunbookError(f"thresholds={given!r} is not a mapping: pass e.g. "
                           "'{max_age_hours: 6, max_skew: 3}'")
    known = {f.name: f.type for f in fields(Thresholds)}
    unknown = sorted(set(mapping) - set(known))
    if unknown:
        raise RunbookError(f"thresholds: {', '.join(map(str, unknown))} not known; known: "
                           f"{', '.join(known)}")
    values = {}
    for name, value in mapping.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise RunbookError(f"thresholds: {name}={value!r} is not a number >= 0")
        values[name] = int(value) if known[name] == "int" else float(value)
    return replace(Thresholds(), **values)


def thresholds_dict(t: Thresholds) -> dict:
    return asdict(t)


def replace_threshold(t: Thresholds, **values) -> Thresholds:
    return replace(t, **values)
