"""What each stateful operator keeps, where Spark lays it out, how its rows expire, how to read it.

The one place that knows Spark's operators. Every runbook reads state through the units listed
here, so a new operator shape is taught once.

Public API
----------
``state_units(ckpt, operator_id=-1) -> list[StateUnit]``
    Every unit Spark's ``statestore`` reader reads to cover the checkpoint's state (or one
    operator's): a store, one side's store of a join (state format 3 included: its four column
    families are read by their format-2 store names), a state variable of transformWithState
    (value, list, map) or its registered timers. ``StateUnit.options`` are the reader options that
    select it (besides ``operatorId`` and ``batchId``); ``state_reader.read_unit`` reads one.
``state_partitions(ckpt, operator_id) -> tuple[int, ...]``
    The partitions whose folders hold the operator's state (a streaming limit: partition 0 only,
    whatever ``numPartitions`` says). Other partition folders are absent by design, not missing.
``operator_model(ckpt, operator_id) -> OperatorModel``
    The operator's family, join state format, time mode, partitions, expiry rule and notes (e.g.
    that it had no operator metadata and was inferred from the folder layout).
``describe(operator_name) -> str``
    The family of an operator name Spark writes (``aggregation``, ``dedup``, ``join``, ...).

Facts (PySpark 4.3.0, seen): operator names ``stateStoreSave``, ``dedupe``,
``dedupeWithinWatermark``, ``symmetricHashJoin``, ``sessionWindowStateStoreSaveExec``,
``applyInPandasWithState``, ``transformWithStateInPySparkExec`` (Python processors; Scala's is
``transformWithStateExec``), ``globalLimit``. Operator metadata v1 is ``state/<op>/_metadata/
metadata``; v2 (transformWithState, join state format 3) is ``state/<op>/_metadata/v2/<batch>``
with ``operatorProperties`` (``stateVariables``, ``timeMode``; ``useVirtualColumnFamilies``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.spark_settings import (
    JOIN_FORMAT_CONF,
    SHUFFLE_PARTITIONS_CONF,
)

from .checkpoint import DEFAULT_STORE, Checkpoint, OperatorInfo

JOIN_SIDES = ("left", "right")
JOIN_STORE_SUFFIXES = ("keyToNumValues", "keyWithIndexToValue")
JOIN_STORES = tuple(f"{side}-{suffix}" for side in JOIN_SIDES for suffix in JOIN_STORE_SUFFIXES)
DEFAULT_JOIN_FORMAT = 2  # Spark's default since 3.0

FAMILIES = {
    "stateStoreSave": "aggregation",
    "dedupe": "dedup",
    "dedupeWithinWatermark": "dedup_within_watermark",
    "symmetricHashJoin": "join",
    "sessionWindowStateStoreSaveExec": "session_window",
    "flatMapGroupsWithState": "group_state",
    "applyInPandasWithState": "group_state",
    "globalLimit": "limit",
}
TRANSFORM_WITH_STATE_PREFIX = "transformWithState"  # transformWithStateExec, ...InPySparkExec, ...

# stateVariableType in transformWithState's operator properties -> unit kind.
VARIABLE_KINDS = {"ValueState": "value", "ListState": "list", "MapState": "map",
                  "TimerState": "timers"}

@dataclass(frozen=True)
class Expiry:
    """How Spark removes a unit's rows.

    ``rule``: ``watermark_key`` (a key column behind the watermark), ``window_end``,
    ``session_end``, ``expires_at`` (dedupWithinWatermark's ``expiresAtMicros``), ``join_side``
    (the watermark and the join's time bounds), ``timeout`` (group state), ``ttl``, ``timer``,
    ``processor`` (only the processor's own code clears it), ``never``, ``unknown``.
    ``column``: the state column compared, when one is (None until a key schema names it).
    ``clock``: ``event_time`` (the watermark), ``processing_time`` (the batch's timestamp) or
    ``either`` (group state: its timeout kind is not recorded in the checkpoint).
    """
    rule: str
    column: str | None = None
    clock: str | None = None
    micros: bool = False  # the column counts microseconds (else milliseconds or a timestamp)


@dataclass(frozen=True)
class StateUnit:
    """One thing Spark's ``statestore`` reader reads: a store, a join store, a state variable or
    registered timers."""
    operator_id: int
    operator_name: str
    store_name: str  # the storeName Spark's reader takes (join format 3: a column family's name)
    state_variable: str | None  # transformWithState's variable; None for other stores
    kind: str  # store, join_count, join_rows, value, list, map, timers
    num_partitions: int
    partitions_with_state: tuple[int, ...]
    options: dict = field(hash=False)  # reader options besides operatorId and batchId
    files_store: str = DEFAULT_STORE  # the store folder holding its files
    expiry: Expiry = Expiry("unknown")
    ttl: bool = False

    @property
    def label(self) -> str:
        if self.kind == "timers":
            return f"{self.operator_id}/timers"
        return f"{self.operator_id}/{self.state_variable or self.store_name}"


@dataclass(frozen=True)
class OperatorModel:
    """One operator as the runbooks understand it."""
    operator_id: int
    operator_name: str
    family: str
    num_partitions: int
    partitions_with_state: tuple[int, ...]
    metadata: str  # state-metadata, metadata-file, or files (no operator metadata)
    join_state_format: int | None = None
    time_mode: str | None = None  # transformWithState: ProcessingTime, EventTime, NoTime
    expiry: Expiry = Expiry("unknown")
    notes: tuple[str, ...] = ()


def describe(operator_name: str, store_names=()) -> str:
    """The family of an operator (``unknown`` when the runbooks do not know it). Without operator
    metadata the name is ``unknown``; a join still shows by its four store folders."""
    if operator_name.startswith(TRANSFORM_WITH_STATE_PREFIX):
        return "transform_with_state"
    family = FAMILIES.get(operator_name)
    if family is None and set(JOIN_STORES) <= set(store_names):
        return "join"
    return family or "unknown"


def _num_partitions(ckpt: Checkpoint, op: OperatorInfo) -> int:
    """Partitions the operator runs on: the newest offsets' pinned shuffle partitions (an offline
    repartition changes those but not ``state-metadata``), else the operator metadata's count."""
    pinned = ckpt.pinned_conf.get(SHUFFLE_PARTITIONS_CONF)
    return int(pinned) if pinned and pinned.isdigit() else op.num_partitions


def _join_format(ckpt: Checkpoint, op: OperatorInfo) -> int:
    if op.properties.get("useVirtualColumnFamilies"):
        return 3
    pinned = ckpt.pinned_conf.get(JOIN_FORMAT_CONF, "")
    return int(pinned) if pinned.isdigit() else DEFAULT_JOIN_FORMAT


def rocksdb_only(ckpt: Checkpoint) -> str | None:
    """Why this checkpoint's state can live only in RocksDB (transformWithState, a join in state
    format 3: both use RocksDB's column families), or None."""
    for op in ckpt.operators():
        model = operator_model(ckpt, op.operator_id)
        if model.family == "transform_with_state" or model.join_state_format == 3:
            what = ("transformWithState" if model.family == "transform_with_state"
                    else "a join in state format 3")
            return (f"operator {op.operator_id} is {what}, which Spark runs only on RocksDB "
                    "(column families)")
    return None


def operator_model(ckpt: Checkpoint, operator_id: int) -> OperatorModel:
    op = ckpt.operator(operator_id)
    family = describe(op.operator_name, [s.store_name for s in op.stores])
    parts = _num_partitions(ckpt, op)
    on_disk = tuple(range(parts))
    notes = []
    if op.source == "files":
        notes.append("no operator metadata (a checkpoint written before Spark 4.0, or its "
                     "_metadata was lost): operator and stores inferred from the folder layout")
    elif op.source == "metadata-file":
        notes.append("Spark's state-metadata source returned nothing for it: read from its "
                     f"_metadata file (v{op.metadata_version})")
    join_format = _join_format(ckpt, op) if family == "join" else None
    time_mode = op.properties.get("timeMode") if family == "transform_with_state" else None
    if family == "limit":
        on_disk = (0,)
        notes.append("a streaming limit keeps one count in partition 0; the other partitions "
                     "have no state folder, by design")
    if join_format == 3:
        notes.append("join state format 3: both sides are column families of one RocksDB store "
                     "'default', read by their format-2 store names")
    if family == "transform_with_state" and "stateVariables" not in op.properties:
        notes.append("its state variables are not recorded in the operator metadata found, so "
                     "they cannot be listed")
    if family == "unknown" and op.source != "files":
        notes.append(f"operator {op.operator_name!r} is not one the runbooks know: its stores are "
                     "read as they are and nothing is said about how its rows expire")
    return OperatorModel(op.operator_id, op.operator_name, family, parts, on_disk, op.source,
                         join_format, time_mode, _operator_expiry(family), tuple(notes))


def _operator_expiry(family: str) -> Expiry:
    return {
        "aggregation": Expiry("watermark_key", clock="event_time"),
        "dedup": Expiry("watermark_key", clock="event_time"),
        "dedup_within_watermark": Expiry("expires_at", "value.expiresAtMicros", "event_time",
                                         micros=True),
        "join": Expiry("join_side", clock="event_time"),
        "session_window": Expiry("session_end", clock="event_time"),
        "group_state": Expiry("timeout", "value.timeoutTimestamp", "either"),
        "transform_with_state": Expiry("processor"),
        "limit": Expiry("never"),
    }.get(family, Expiry("unknown"))


def state_partitions(ckpt: Checkpoint, operator_id: int) -> tuple[int, ...]:
    """The partitions whose folders hold the operator's state."""
    return operator_model(ckpt, operator_id).partitions_with_state


def _units_of(ckpt: Checkpoint, op: OperatorInfo) -> list[StateUnit]:
    model = operator_model(ckpt, op.operator_id)

    def unit(store, variable=None, kind="store", options=None, files_store=None,
             expiry=model.expiry, ttl=False):
        return StateUnit(op.operator_id, op.operator_name, store, variable, kind,
                         model.num_partitions, model.partitions_with_state,
                         options if options is not None else {"storeName": store},
                         files_store or store, expiry, ttl)

    if model.family == "join":
        names = JOIN_STORES if model.join_state_format == 3 else [s.store_name for s in op.stores]
        files = DEFAULT_STORE if model.join_state_format == 3 else None
        return [unit(n, kind="join_rows" if n.endswith(JOIN_STORE_SUFFIXES[1]) else "join_count",
                     files_store=files) for n in names]
    if model.family == "transform_with_state" and "stateVariables" in op.properties:
        units = []
        clock = "event_time" if model.time_mode == "EventTime" else "processing_time"
        for var in sorted(op.properties.get("stateVariables") or [],  # timers last
                          key=lambda v: (v.get("stateVariableType") == "TimerState",
                                         str(v.get("stateName")))):
            name, kind = str(var.get("stateName")), VARIABLE_KINDS.get(var.get("stateVariableType"))
            if kind == "timers":
                units.append(unit(DEFAULT_STORE, name, "timers", {"readRegisteredTimers": "true"},
                                  expiry=Expiry("timer", "expiration_timestamp_ms", clock)))
            elif kind:
                ttl = bool(var.get("ttlEnabled"))
                # A value's TTL is value.ttlExpirationMs; a list's or map's is found in its schema.
                column = "value.ttlExpirationMs" if kind == "value" else None
                expiry = Expiry("ttl", column, "processing_time") if ttl else Expiry("processor")
                units.append(unit(DEFAULT_STORE, name, kind, {"stateVarName": name},
                                  expiry=expiry, ttl=ttl))
            else:
                units.append(unit(DEFAULT_STORE, name, "unknown", {"stateVarName": name},
                                  expiry=Expiry("unknown")))
        return units
    return [unit(s.store_name) for s in op.stores]


def state_units(ckpt: Checkpoint, operator_id: int = -1) -> list[StateUnit]:
    """Every readable unit of the checkpoint (or of one operator), in operator order."""
    ops = ckpt.operators() if operator_id == -1 else [ckpt.operator(operator_id)]
    return [u for op in ops for u in _units_of(ckpt, op)]


def find_unit(ckpt: Checkpoint, operator_id: int, store_name: str = DEFAULT_STORE,
              state_variable: str | None = None) -> StateUnit | None:
    """The unit read by ``store_name`` (and ``state_variable``), None when the model has none.
    A join in state format 3 answers to its four store names; its metadata name ``default``
    matches none of them."""
    for unit in state_units(ckpt, operator_id):
        if unit.store_name == store_name and unit.state_variable == state_variable:
            return unit
    return None


def matches_store(unit: StateUnit, store_name: str) -> bool:
    """Whether ``unit`` is the one ``store_name`` names (a store or a state variable; empty: any)."""
    return not store_name or store_name in (unit.store_name, unit.state_variable)


# Operator families whose state only ever gets keys it does not hold: Spark's deduplications look
# the key up and put it only when absent, and remove only keys they hold. Their change feed alone
# gives the rows of earlier batches (:func:`~state_runbooks.core.growth.rows_back_from_changes`).
NEW_KEYS_ONLY_FAMILIES = ("dedup", "dedup_within_watermark")


def puts_only_new_keys(ckpt, unit) -> bool:
    """Whether ``unit``'s state only ever gets keys it does not hold and Spark serves its change
    feed. ``unit``: a :class:`StateUnit` or a report of one."""
    return (serves_change_feed(ckpt, unit)
            and operator_model(ckpt, unit.operator_id).family in NEW_KEYS_ONLY_FAMILIES)


def serves_change_feed(ckpt, unit) -> bool:
    """Whether Spark serves ``unit``'s state change feed: a store read by its name alone (not a
    state variable, not timers, not a join side kept as a column family of another store) on a
    provider that writes a change per batch. ``unit``: a :class:`StateUnit` or a report of one."""
    if unit.state_variable is not None or unit.kind == "timers" or \
            unit.files_store != unit.store_name:
        return False
    return ckpt.writes_change_feed
