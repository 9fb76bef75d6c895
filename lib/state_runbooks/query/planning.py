"""Spark's own restart checks, called without running a batch (classic sessions).

When a query restarts, Spark plans its first batch with ``IncrementalExecution`` and, because it
is the first batch of the run, checks every stateful operator against the checkpoint: the
operator metadata (``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``) and each store's
key and value schema (``StateSchemaCompatibilityChecker``: ``STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE``
and the rest, Avro evolution rules included). Both happen while the plan is prepared, before any
data is read. Here the changed query is planned the same way, twice, in a clone of the session
with the checkpoint's pinned settings applied as a restart applies them:

1. on an empty folder, as batch 0: Spark writes the changed query's operator metadata and
   schemas there, which is how its side of the comparison is read;
2. on a local copy of the checkpoint's operator metadata and schema files (kilobytes), as the
   batch a restart runs: Spark's check passes or raises the error class a restart would.

Both folders are local and temporary; the checkpoint is only read. Planning needs Spark's
internal classes, whose constructor differs between versions: when it cannot be called, the
prediction says so, and a runbook falls back to comparing the files with
:func:`state_runbooks.core.state_schemas.compatible`.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field

from state_runbooks.common.errors import first_line, spark_error_class
from state_runbooks.core.fs import open_fs
from state_runbooks.core.spark_internals import plan_restart
from state_runbooks.core.state_layout import OperatorState, state_layout
from state_runbooks.session.spark_session import is_connect, session_conf

# Files of the checkpoint Spark's check reads: operator metadata and schema files.
_CHECKED_FILE = re.compile(r"^state/\d+/(_metadata/.*|_stateSchema/.*|0/([^/]+/)?_metadata/schema)$")
_SCHEMA_PATH = re.compile(r'"([^"]*?)(/state/\d+/_stateSchema/[^"]*)"')


@dataclass
class Probe:
    available: bool  # whether Spark's planning could be called here
    reason: str = ""  # why not
    new_operators: list[OperatorState] = field(default_factory=list)
    new_known: bool = False  # Spark's planning showed the changed query's operators and schemas
    error_class: str | None = None  # Spark's check against the checkpoint: None when it passed
    message: str = ""
    seconds: float = 0.0


def checked_files(walk: dict) -> list[str]:
    """The checkpoint files Spark's restart check reads (relative paths)."""
    return sorted(rel for rel in walk if _CHECKED_FILE.match(rel))


def copy_pointing_here(src, dst, rel: str, dst_rel: str | None = None) -> None:
    """Copy one file (to ``dst_rel``, by default the same path); operator metadata v2 names
    schema files by absolute path, so the copy's names point into the copy (Spark must never be
    led back to the original)."""
    target = dst_rel or rel
    if is_metadata_v2(rel):
        text = src.read_text(rel)
        root = dst.uri("").rstrip("/")
        dst.write_bytes(target,
                        _SCHEMA_PATH.sub(lambda m: f'"{root}{m.group(2)}"', text).encode())
    else:
        src.copy_to(rel, dst, target)


def is_metadata_v2(rel: str) -> bool:
    """Operator metadata v2 (``state/<op>/_metadata/v2/<batch>``), which names files by path."""
    return "/_metadata/v2/" in rel


def _unwrap(exc: BaseException) -> BaseException:
    """The Spark exception inside a reflective call's InvocationTargetException."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    unwrapped = False
    while java is not None and str(java.getClass().getName()).endswith(
            "InvocationTargetException"):
        java, unwrapped = java.getCause(), True
    return java if unwrapped and java is not None else exc


def plan_fresh(spark, job, folder: str, metadata_json: str, query_id: str) -> list[OperatorState]:
    """Plan the changed query as the first batch of a new query in the local ``folder``: Spark
    writes there the operator metadata and state schemas the changed query uses (read back and
    returned). Raises what Spark's planning raises."""
    # A new query's folder, as Spark makes it before its first batch (transformWithState looks
    # for its logs there).
    for log in ("offsets", "commits"):
        os.makedirs(os.path.join(folder, log), exist_ok=True)
    # A new query logs batch 0's offsets before it plans it; operators whose metadata is v2
    # (transformWithState, join state format 3) find their batch through it.
    with open(os.path.join(folder, "offsets", "0"), "w") as entry:
        entry.write(f"v1\n{metadata_json}\n")
    with session_conf(spark, job.job_conf):
        plan_restart(spark, job.df, job.output_mode, f"file:{folder}/state", 0, metadata_json,
                     query_id)
    return state_layout(spark, open_fs(spark, f"file:{folder}"))


def restart_settings(ckpt) -> tuple[int, str, str]:
    """The newest offsets entry's batch, its metadata line (the settings a restart applies) and
    the query's id: what planning the changed query as a restart takes."""
    newest = ckpt.offset_batch_ids[-1]
    metadata_json = ckpt.fs.read_text(f"offsets/{newest}").splitlines()[1]
    return newest, metadata_json, ckpt.query_id or "00000000-0000-0000-0000-000000000000"


def probe(spark, ckpt, job, batch_id: int, metadata_json: str, query_id: str) -> Probe:
    """Plan the changed query twice (see the module's docstring)."""
    import time
    if is_connect(spark):
        return Probe(False, "Spark Connect: the client cannot call Spark's planning")
    start = time.perf_counter()
    folder = tempfile.mkdtemp(prefix="state-runbooks-check-")
    try:
        with session_conf(spark, job.job_conf):
            new_operators, fresh_note, new_known = [], "", False
            try:
                new_operators = plan_fresh(spark, job, os.path.join(folder, "fresh"),
                                           metadata_json, query_id)
                new_known = True
            except Exception as exc:  # noqa: BLE001 - see below
                inner = _unwrap(exc)
                if isinstance(exc, (LookupError, KeyError)) or spark_error_class(inner) is None:
                    return Probe(False, f"Spark's planning cannot be called here: "
                                        f"{first_line(inner)}")
                # Not every operator plans on an empty folder (transformWithState reads its
                # metadata there): its schemas stay unknown; the check below still decides.
                fresh_note = f"{spark_error_class(inner)} on an empty folder"
            copy = open_fs(spark, f"file:{folder}/check")
            source = ckpt.fs
            # transformWithState's metadata reader finds its batch through the logs.
            logs = [f"commits/{b}" for b in ckpt.commit_batch_ids if b < batch_id] + \
                [f"offsets/{b}" for b in ckpt.offset_batch_ids if b in (batch_id - 1, batch_id)] + \
                (["metadata"] if source.exists("metadata") else [])
            for rel in checked_files(source.walk("state")) + logs:
                copy_pointing_here(source, copy, rel)
            error_class = message = None
            try:
                plan_restart(spark, job.df, job.output_mode, f"file:{folder}/check/state",
                             batch_id, metadata_json, query_id)
            except Exception as exc:  # noqa: BLE001 - Spark's check raised: the prediction
                inner = _unwrap(exc)
                error_class = spark_error_class(inner) or type(inner).__name__
                message = _message(inner)
        return Probe(True, fresh_note, new_operators=new_operators, new_known=new_known,
                     error_class=error_class,
                     message=message or "", seconds=time.perf_counter() - start)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _message(exc) -> str:
    """Spark's message in one line, without the remedy paragraphs it appends."""
    text = str(exc.getMessage()) if not isinstance(exc, BaseException) else str(exc)
    line = " ".join(text.split("\n")[:2]).split(" SQLSTATE")[0].strip()
    return re.sub(r"^\[[A-Z0-9_.]+\]\s*", "", line)  # the class is said beside it
