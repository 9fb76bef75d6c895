"""Spark's own loads of the state, and the one rule for what a failed load means.

A load is Spark's ``statestore`` reader on one unit of the operator model (a store, a join side's
store, a transformWithState variable) at a batch, or the state change feed of single versions.
A failed load means one of three things (:func:`load_failure_kind`), for every runbook alike:

- ``damage``: Spark's own store code failed on the files (a ``.delta`` that does not decompress,
  a zip that does not open): evidence that files are broken; runbook 05 is the way back;
- ``reader limit``: the reader refused the read itself (``STDS_*``: an option it needs, a schema
  it cannot read): nothing is known about the files, and the query is not affected;
- ``not damage``: Spark ran out of a resource (memory) or tripped on a thread: nothing is known
  about the files; give the read more memory, or read fewer units at a time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce

from state_runbooks.common.errors import (
    RunbookError,
    full_error_text,
    spark_errors,
    spark_line,
)

from .checkpoint import Checkpoint
from .operators import StateUnit, find_unit, state_units
from .state_reader import change_feed, read_unit


@dataclass
class LoadResult:
    """Spark's ``statestore`` reader on one unit (a store, a join side, a state variable) at one
    batch."""
    operator_id: int
    store_name: str  # the unit's label: a store name, a join side or a state variable
    batch_id: int
    ok: bool
    rows: int | None = None
    error_class: str | None = None
    message: str = ""
    path: str | None = None  # the file at fault, when known
    partitions: tuple[int, ...] = ()  # the partitions Spark's error names, when it names any

    @property
    def label(self) -> str:
        return f"{self.operator_id}/{self.store_name}"

    @property
    def damaged(self) -> bool:
        """The load failed inside Spark's own store code: evidence that files are broken."""
        return not self.ok and is_store_load_failure(self.error_class)

    @property
    def reader_limit(self) -> bool:
        """The load failed for a reason of the reader (an option, a schema it cannot read):
        nothing is known about the files."""
        return not self.ok and not self.damaged


# Reads Spark's statestore reader refuses on healthy state (seen on 4.3): the error is the
# reader's, not the files'.
READER_LIMITS = {
    "STDS_FAILED_TO_READ_STATE_SCHEMA":
        "a join in state format 3 read as its one store 'default' (read each side's store by its "
        "name instead)",
    "STDS_REQUIRED_OPTION_UNSPECIFIED":
        "transformWithState read without stateVarName",
    "STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS":
        "transformWithState's timers read by stateVarName (read them with readRegisteredTimers)",
}


def is_reader_limit(error_class: str | None) -> bool:
    """Whether a Spark error class is the reader refusing a read (an option, a schema), which
    says nothing about the state's files."""
    return bool(error_class) and (error_class in READER_LIMITS or error_class.startswith("STDS_"))


# Error classes raised when Spark's own store code fails on the files: evidence of damage.
_STORE_LOAD_FAILURES = ("CANNOT_LOAD_STATE_STORE", "CANNOT_READ_ZIP_ENTRY",
                        "STATE_STORE_UNEXPECTED_EMPTY_FILE_IN_ROCKSDB_ZIP",
                        "STATE_STORE_ROW_CHECKSUM_VERIFICATION_FAILED")
# Raised from inside the store code too, but by a resource or a thread, not by the files.
_NOT_DAMAGE = ("CANNOT_LOAD_STATE_STORE.HDFS_STORE_PROVIDER_OUT_OF_MEMORY",
               "CANNOT_LOAD_STATE_STORE.ROCKSDB_STORE_PROVIDER_OUT_OF_MEMORY",
               "CANNOT_LOAD_STATE_STORE.SNAPSHOT_PARTITION_ID_NOT_FOUND",
               "CANNOT_LOAD_STATE_STORE.UNRELEASED_THREAD_ERROR")
DAMAGE, READER_LIMIT, NOT_DAMAGE = "damage", "reader limit", "not damage"
# What each kind means for the reader, worded once for every runbook.
LOAD_FAILURE_MEANING = {
    DAMAGE: "Spark could not load it: run 05 recover corrupted state",
    READER_LIMIT: "a limit of Spark's statestore reader, not damage",
    NOT_DAMAGE: "Spark ran out of a resource or failed outside the files, not damage",
}
# Where Spark's errors name a partition: RocksDB's StateStoreId(opId=0,partId=1,...), the
# HDFS-backed provider's StateStoreId[ operatorId=0, partitionId=1, ...], and a failed task
# (the reader runs one task per partition folder, in the order of their numbers).
_PARTITION_NAMED = re.compile(r"\b(?:partId|partitionId)=(\d+)")
_TASK_NAMED = re.compile(r"Lost task (\d+)\.\d+ in stage")


def is_store_load_failure(error_class: str | None) -> bool:
    """Whether a Spark error class says its store code could not load the state's files."""
    if not error_class or error_class in _NOT_DAMAGE:
        return False
    return error_class.split(".", 1)[0] in _STORE_LOAD_FAILURES


def load_failure_kind(error_class: str | None) -> str:
    """``damage``, ``reader limit`` or ``not damage``: what a failed load says about the files."""
    if is_store_load_failure(error_class):
        return DAMAGE
    return READER_LIMIT if is_reader_limit(error_class) else NOT_DAMAGE


def operators_of(ckpt: Checkpoint) -> list:
    """The checkpoint's stateful operators; none when it has no state folder with operators."""
    return ckpt.operators() if ckpt.has_state_operators else []


def load_units(ckpt: Checkpoint) -> list[StateUnit]:
    """Every unit Spark's reader loads to cover the checkpoint's state, as the operator model
    reads it (joins of state format 3 by store name, transformWithState by variable)."""
    return state_units(ckpt) if operators_of(ckpt) else []


def _file_at_fault(ckpt: Checkpoint, text: str) -> str | None:
    """A checkpoint file named anywhere in a Spark error (message or causes), relative."""
    roots = {ckpt.root, ckpt.root.replace("file:/", "file:///", 1), ckpt.root.removeprefix("file:")}
    for root in roots:
        match = re.search(re.escape(root) + r"/([^\s,;\]\)]+)", text)
        if match:
            return match.group(1)
    return None


def _partitions_named(text: str, on_disk: list[int]) -> tuple[int, ...]:
    named = {int(p) for p in _PARTITION_NAMED.findall(text)} & set(on_disk)
    if not named:
        ordered = sorted(on_disk)
        named = {ordered[int(t)] for t in _TASK_NAMED.findall(text) if int(t) < len(ordered)}
    return tuple(sorted(named))


def load_unit(ckpt: Checkpoint, unit: StateUnit, batch_id: int, on_disk: list[int] = ()
              ) -> LoadResult:
    """Read one unit at one batch with Spark's ``statestore`` reader (a full scan: a load test)."""
    name = unit.label.split("/", 1)[1]
    try:
        with spark_errors(f"loading {unit.label} at batch {batch_id}"):
            rows = read_unit(ckpt, unit, batch_id).count()
        return LoadResult(unit.operator_id, name, batch_id, True, rows)
    except RunbookError as exc:
        text = full_error_text(exc)
        return LoadResult(unit.operator_id, name, batch_id, False, None, exc.error_class,
                          spark_line(exc), _file_at_fault(ckpt, text),
                          _partitions_named(text, list(on_disk)))


def load_store(ckpt: Checkpoint, operator_id: int, store_name: str, batch_id: int) -> LoadResult:
    """Read one store at one batch with Spark's ``statestore`` reader (a full scan: a load test)."""
    return load_unit(ckpt, find_unit(ckpt, operator_id, store_name), batch_id)


def load_batch(ckpt: Checkpoint, batch_id: int, units: list[StateUnit] | None = None
               ) -> tuple[bool, str]:
    """Load every unit (default: all of the checkpoint) at one batch, in one Spark job."""
    units = load_units(ckpt) if units is None else units
    if not units:
        return True, ""
    try:
        with spark_errors(f"loading the state of batch {batch_id}"):
            frames = [read_unit(ckpt, u, batch_id).select("partition_id") for u in units]
            reduce(lambda a, b: a.unionAll(b), frames).count()
        return True, ""
    except RunbookError as exc:
        return False, f"{exc.error_class or 'error'}: {spark_line(exc)}"


def changes_load(ckpt: Checkpoint, unit: StateUnit, first_version: int, last_version: int,
                  on_disk: list[int]) -> tuple[bool | None, tuple[int, ...], str | None]:
    """Spark's state change feed over versions ``first_version..last_version``: it reads exactly
    those versions' ``.delta`` or ``.changelog`` files and nothing else (seen on 4.3). Returns
    whether it loads (None: the reader refuses the read itself, which tells nothing), the
    partitions its error names, and the file its error names."""
    try:
        with spark_errors(f"reading the changes of {unit.label}"):
            change_feed(ckpt, unit.operator_id, unit.options, first_version - 1,
                        last_version - 1).count()
        return True, (), None
    except RunbookError as exc:
        if is_reader_limit(exc.error_class):
            return None, (), None
        text = full_error_text(exc)
        return False, _partitions_named(text, on_disk), _file_at_fault(ckpt, text)

