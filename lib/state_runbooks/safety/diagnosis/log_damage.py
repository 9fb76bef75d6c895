"""Damage to the files beside the state: ``metadata``, ``offsets/<batch>``, ``commits/<batch>``,
``sources/``, the operator metadata (``state/<op>/_metadata/...``) and the state schema files
(``state/<op>/<partition>/[<store>/]_metadata/schema``, ``state/<op>/_stateSchema/...``).

Each file is read once, without the checksum layer, and parsed the way Spark reads it: a file that
is missing, empty, cut short (shorter than its ``.crc`` sidecar was written for, or its text ends
mid-entry), garbage (not text, no version line, not JSON) or whose bytes no longer match its
sidecar becomes a finding: the file, what is wrong, what Spark does with it on restart (seen on
Spark 4 with real queries, tests/spark/test_recover_corrupted_state_log_damage.py) and the minimal repair, if any. Nothing
here raises on a damaged file.

What Spark does on restart (HDFSMetadataLog, OffsetSeqLog, CommitLog, StreamMetadata):

- ``metadata``: read first; missing with logs present fails with
  STREAMING_CHECKPOINT_MISSING_METADATA_FILE, damaged fails in the JSON parser. Only the query id is
  in it; the offsets and commits logs do not carry it, nor does the state. A new id makes the
  restarted query another query (sinks that keep the query id for exactly-once, such as Delta's
  ``txnAppId``, treat its batches as new).
- ``offsets``: the newest entry and the one before it are read; a damaged one fails the restart.
  A commit whose offsets entry is missing fails it too (CONCURRENT_STREAM_LOG_UPDATE).
- ``commits``: the newest entry is read; damaged, it fails the restart. Moved aside, its batch
  counts as in flight and is re-run, as after a crash.
- operator metadata: written only when missing; a damaged one does not stop a restart, stays
  damaged, and Spark's state-metadata source cannot list the operators.
- ``sources/<i>/<n>`` (a file source's list of input files per source batch): every entry since
  the last ``.compact`` one is read, so any damaged or missing one fails the restart. The newest
  batch's entry goes aside with that batch's offsets and commit (the batch runs again); an older
  one can only come back from a backup.
- state schema: a damaged one fails the restart (java.io.EOFException); a missing one is written
  again from the query's schema.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError
from state_runbooks.core import offset_log
from state_runbooks.core.fs import open_fs
from state_runbooks.core.fs.base import is_checksum_file, sidecar_of
from state_runbooks.core.log_files import json_problem
from state_runbooks.core.state_files import is_schema_file

_VERSION_LINE = re.compile(r"^v\d+$")
_CRC_HEADER_BYTES = 8
_BYTES_PER_CHECKSUM = 512
_OPERATOR_METADATA = re.compile(r"^state/\d+/_metadata/(metadata|v2/\d+)$")
_QUERY_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def file_kind(rel: str) -> str | None:
    """Which log file a path is (None: a state file or anything else)."""
    if rel == "metadata":
        return "metadata"
    head = rel.split("/", 1)[0]
    if head in ("offsets", "commits") and rel.split("/")[-1].isdigit() and rel.count("/") == 1:
        return head
    if head == "sources" and not is_checksum_file(rel):
        return "sources"
    if _OPERATOR_METADATA.match(rel):
        return "operator_metadata"
    if is_schema_file(rel):
        return "state_schema"
    return None


def damage_of(kind: str, data: bytes, sidecar: bytes | None) -> tuple[str, str] | None:
    """(damage, what is wrong) of one file's bytes, or None when it reads as Spark reads it.
    damage: empty, truncated, garbage or checksum."""
    if not data:
        return "empty", "empty (0 bytes)"
    short = _shorter_than_sidecar(len(data), sidecar)
    problem = _parse_problem(kind, data)
    if short:
        return "truncated", f"cut short: {short}"
    if problem:
        return problem
    if sidecar is not None and not _matches_sidecar(data, sidecar):
        return "checksum", ("its bytes do not match its .crc sidecar: the file changed after Spark "
                            "wrote it")
    return None


def _shorter_than_sidecar(size: int, sidecar: bytes | None) -> str:
    if sidecar is None or len(sidecar) < _CRC_HEADER_BYTES:
        return ""
    per_sum = int.from_bytes(sidecar[4:8], "big") or _BYTES_PER_CHECKSUM
    sums = (len(sidecar) - _CRC_HEADER_BYTES) // 4
    if sums == math.ceil(size / per_sum):
        return ""
    low, high = (sums - 1) * per_sum + 1, sums * per_sum
    return (f"{size} bytes, but its .crc sidecar was written for {low}..{high} bytes" if size < low
            else f"{size} bytes, its .crc sidecar was written for {low}..{high} bytes (it grew)")


def _matches_sidecar(data: bytes, sidecar: bytes) -> bool:
    """Hadoop's CRC32 per chunk (ChecksumFileSystem's default type for local files)."""
    import zlib
    per_sum = int.from_bytes(sidecar[4:8], "big") or _BYTES_PER_CHECKSUM
    sums = sidecar[_CRC_HEADER_BYTES:]
    for i in range(0, len(data), per_sum):
        expected = sums[(i // per_sum) * 4:(i // per_sum) * 4 + 4]
        if zlib.crc32(data[i:i + per_sum]).to_bytes(4, "big") != expected:
            return False
    return True


def _parse_problem(kind: str, data: bytes) -> tuple[str, str] | None:
    if kind == "state_schema":
        return _schema_problem(data)
    if kind == "offsets":  # every format Spark writes, read as Spark reads it
        return offset_log.problem(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "garbage", "garbage: not text (not UTF-8)"
    lines = text.split("\n")
    if kind == "metadata":
        return json_problem(text, "the JSON holding the query id", require="id")
    if not _VERSION_LINE.match(lines[0]):
        if "v1".startswith(lines[0]) and len(lines) == 1:
            return "truncated", "cut short: it ends in its version line"
        return "garbage", f"garbage: the first line is not a version line (v1): {lines[0][:30]!r}"
    body = [line for line in lines[1:]]
    if kind in ("commits", "operator_metadata"):
        if len(body) == 0 or not body[0]:
            return "truncated", "cut short: it ends after its version line"
        return json_problem(body[0], "line 2")
    for n, line in enumerate(body, start=2):  # sources/: one JSON value per line
        if line:
            found = json_problem(line, f"line {n}", scalars=True)
            if found:
                return found
    return None


def _schema_problem(data: bytes) -> tuple[str, str] | None:
    """Spark's schema files: Java's writeUTF("v<N>") first, then the schemas (v2: for the key
    and the value, an int count of writeUTF chunks of JSON)."""
    if len(data) < 4:
        return "truncated", f"cut short: {len(data)} bytes"
    size = int.from_bytes(data[:2], "big")
    head = data[2:2 + size]
    if not re.fullmatch(rb"v\d+", head):
        return "garbage", "garbage: no schema version at its start"
    if head != b"v2":
        return None  # other formats: only emptiness and the sidecar are checked
    pos = 2 + size
    for part in ("key", "value"):
        if pos + 4 > len(data):
            return "truncated", f"cut short: it ends before the {part} schema"
        chunks, pos = int.from_bytes(data[pos:pos + 4], "big"), pos + 4
        text = b""
        for _ in range(chunks):
            if pos + 2 > len(data):
                return "truncated", f"cut short: it ends in the {part} schema"
            n = int.from_bytes(data[pos:pos + 2], "big")
            if pos + 2 + n > len(data):
                return "truncated", f"cut short: it ends in the {part} schema"
            text, pos = text + data[pos + 2:pos + 2 + n], pos + 2 + n
        try:
            json.loads(text.decode("utf-8"))
        except ValueError:
            return "garbage", f"garbage: its {part} schema is not JSON"
    return None


def query_id_hint(damaged: bytes | None, backups: dict[str, bytes]) -> tuple[str | None, str]:
    """The query id a ``metadata`` file must hold again, and where it was found: what is left of
    the damaged file, else a backup of it (05's ``<checkpoint>.recovery-*/copy/metadata``)."""
    for label, data in ([("what is left of the damaged file", damaged)] if damaged else []) + \
            list(backups.items()):
        found = _QUERY_ID.search(data.decode("utf-8", "replace"))
        if found:
            return found.group(0), label
    return None, ("no backup of it was found next to the checkpoint, and the offsets, commits and "
                  "state do not carry it: take it from the query's logs or listener (the 'id' of "
                  "its progress)")


def _backups_of_metadata(spark, root: str) -> dict[str, bytes]:
    """``metadata`` files of 05's backups beside the checkpoint (newest first)."""
    out: dict[str, bytes] = {}
    parent, _, name = root.rstrip("/").rpartition("/")
    try:
        siblings = open_fs(spark, parent).raw()
        for entry in sorted(siblings.list(), key=lambda e: e.name, reverse=True):
            if entry.is_dir and entry.name.startswith(name + ".recovery-") and \
                    siblings.exists(f"{entry.name}/copy/metadata"):
                out[f"{parent}/{entry.name}/copy/metadata"] = siblings.read_bytes(
                    f"{entry.name}/copy/metadata")
    except Exception:  # noqa: BLE001 - a parent we cannot list holds no backup for us
        pass
    return out


@dataclass
class Logs:
    """What the damage checks read of a checkpoint: its files (without the checksum layer), their
    inventory and the batches of its offsets and commits logs."""
    spark: object
    raw: object  # the checkpoint's file system, read without the checksum layer
    root: str
    inventory: dict  # relative path -> size, every file of the checkpoint
    offsets: list[int]  # batches with an offsets entry, in order
    commits: list[int]  # batches with a commit, in order
    has_crc: bool = False  # the files have .crc sidecars to compare with

    @property
    def last_commit(self) -> int | None:
        return self.commits[-1] if self.commits else None


def log_findings(logs: Logs) -> list[dict]:
    """Every damaged log or metadata file: {path, problem, critical, moves, target, batch}.
    ``problem`` is one line: what is wrong, what Spark does on restart, the way back."""
    found = (_log_finding(logs, rel) for rel in sorted(logs.inventory))
    return [finding for finding in found if finding is not None]


def _log_finding(logs: Logs, rel: str) -> dict | None:
    """The finding of one file, or None when it is no log file or it is sound."""
    kind = file_kind(rel)
    if kind is None or is_checksum_file(rel):
        return None
    data = logs.raw.read_bytes(rel)
    found = damage_of(kind, data, sidecar_bytes(logs.raw, logs.inventory, rel)
                      if logs.has_crc else None)
    if found is None:
        return None
    damage, what = found
    batch = int(rel.split("/")[1]) if kind in ("offsets", "commits") else None
    finding = {"path": rel, "kind": kind, "damage": damage, "batch": batch, "critical": True,
               "moves": [], "target": None}
    finding["problem"] = f"{what}; {_on_restart(logs, finding, data)}"
    return finding


def _on_restart(logs: Logs, finding: dict, data: bytes) -> str:
    """What Spark does with the damaged file on restart, and the way back; sets the finding's
    ``critical``, ``moves`` and ``target`` to match."""
    kind, rel = finding["kind"], finding["path"]
    if finding["damage"] == "unknown":  # written by a newer Spark, not damaged: nothing to move
        finding["critical"] = False
        return ("this Spark may refuse it on restart (a newer Spark wrote it); nothing is "
                "planned: read it with the Spark that wrote it")
    if kind == "metadata":
        return _metadata_way_back(logs, data)
    if kind == "offsets":
        return _offsets_way_back(logs, finding)
    if kind == "commits":
        return _commits_way_back(logs, finding)
    if kind == "operator_metadata":
        finding.update(critical=False, moves=[rel], target=logs.last_commit)
        return ("a restart runs, but Spark writes this file only when it is missing, so it "
                "stays damaged and Spark's state-metadata source cannot list the operators. "
                "Way back: move it aside; the next batch writes it again")
    if kind == "state_schema":
        finding.update(moves=[rel], target=logs.last_commit)
        return ("a restart fails reading it (java.io.EOFException). Way back: move it "
                "aside; the restarted query writes it again from its own schema")
    return _source_entry_way_back(finding, rel, newest_source_entries(logs.raw, logs.offsets),
                                  logs.commits)


def _metadata_way_back(logs: Logs, data: bytes) -> str:
    qid, where = query_id_hint(data, _backups_of_metadata(logs.spark, logs.root))
    keep = (f'write {{"id":"{qid}"}} into metadata (the id from {where})' if qid else
            f"restore metadata with the query's id: {where}")
    return ("a restart fails reading it (Spark's JSON parser). Way back: " + keep +
            "; a new id would make the restarted query another query (sinks keyed on "
            "the query id, such as Delta's txnAppId, see its batches as new)")


def _offsets_way_back(logs: Logs, finding: dict) -> str:
    """Spark reads the newest two offsets entries: one of them damaged stops the restart."""
    batch, offsets, commits = finding["batch"], logs.offsets, logs.commits
    if batch < (offsets[-2] if len(offsets) > 1 else batch):
        finding["critical"] = False
        return ("a restart does not read it (only the newest two entries): the query runs "
                "on; a rollback to before it would need it")
    later = [b for b in commits if b >= batch] + [b for b in offsets if b > batch]
    finding.update(moves=[f"commits/{b}" for b in sorted(set(commits)) if b >= batch]
                   + [f"offsets/{b}" for b in offsets if b >= batch],
                   target=batch - 1 if batch > 0 else None)
    return (f"a restart fails reading it (Spark reads the newest two offsets entries). "
            f"Way back: move offsets/{batch}" + (" and the entries after it" if later else "")
            + (f" (with commits/{batch})" if batch in commits else "")
            + f" aside: Spark re-runs batch {batch} from batch {batch - 1}'s offsets")


def _commits_way_back(logs: Logs, finding: dict) -> str:
    """Spark reads the newest commit: that one damaged stops the restart."""
    batch, commits = finding["batch"], logs.commits
    if batch != logs.last_commit:
        finding["critical"] = False
        return "a restart does not read it (only the newest commit): the query runs on"
    finding.update(moves=[f"commits/{batch}"], target=commits[-2] if len(commits) > 1 else None)
    return (f"a restart fails reading it (Spark reads the newest commit). Way back: move "
            f"commits/{batch} aside: batch {batch} then counts as in flight and Spark "
            "re-runs it, as after a crash")


def missing_findings(logs: Logs) -> list[dict]:
    """Missing log files that stop a restart: ``metadata`` (with logs present), the file source
    entry of the newest batch, and the offsets entry of the newest commit."""
    raw, inventory, offsets, commits = logs.raw, logs.inventory, logs.offsets, logs.commits
    out = []
    if "metadata" not in inventory and (offsets or commits):
        qid, where = query_id_hint(None, _backups_of_metadata(logs.spark, logs.root))
        where = f'write {{"id":"{qid}"}} into it, the id from {where}' if qid else where
        out.append({"path": "metadata", "kind": "metadata", "damage": "missing", "batch": None,
                    "critical": True, "moves": [], "target": None,
                    "problem": "missing: a restart fails with STREAMING_CHECKPOINT_MISSING_METADATA_"
                               "FILE. Way back: restore metadata with the query's id (" + where +
                               "); a new id would make the restarted query another query"})
    for rel, batch in newest_source_entries(raw, offsets).items():
        if rel not in inventory and f"{rel}.compact" not in inventory:
            finding = {"path": rel, "kind": "sources", "damage": "missing", "batch": None,
                       "critical": True, "moves": [], "target": None}
            way = _source_entry_way_back(finding, rel, {rel: batch}, commits)
            finding["problem"] = f"missing; {way}"
            out.append(finding)
    if commits and commits[-1] not in offsets:
        b = commits[-1]
        out.append({"path": f"commits/{b}", "kind": "commits", "damage": "missing offsets",
                    "batch": b, "critical": True, "moves": [f"commits/{b}"],
                    "target": b - 1 if b - 1 in commits else None,
                    "problem": f"commit without an offsets entry: a restart fails "
                               f"(CONCURRENT_STREAM_LOG_UPDATE). Way back: move commits/{b} "
                               f"aside: Spark re-runs batch {b} from batch {b - 1}'s offsets"})
    return out


def newest_source_entries(raw, offsets: list[int]) -> dict[str, int]:
    """``sources/<i>/<n>`` -> the newest batch, for each file source whose log entry ``n`` that
    batch added (its offset is ``{"logOffset": n}``, above the batch before's). A file source
    numbers its log on its own, so the entry is found through the offsets, not the batch id."""
    if not offsets:
        return {}
    newest, before = (_log_offsets(raw, b) for b in (offsets[-1], offsets[-2] if len(offsets) > 1
                                                     else None))
    return {f"{folder}/{n}": offsets[-1] for folder, n in newest.items()
            if before.get(folder, -1) < n}


def _log_offsets(raw, batch: int | None) -> dict[str, int]:
    """A file source's log folder -> its logOffset in ``offsets/<batch>`` ({} when unreadable):
    ``sources/<position>`` in offsets log format 1, ``sources/<name>`` in format 2."""
    if batch is None:
        return {}
    try:
        entry = offset_log.parse(raw.read_bytes(f"offsets/{batch}"))
    except (OSError, ValueError, RunbookError):
        return {}
    values = {offset_log.source_log_folder(s, i): s.value for i, s in enumerate(entry.sources)}
    return {folder: v["logOffset"] for folder, v in values.items()
            if isinstance(v, dict) and isinstance(v.get("logOffset"), int)}


def _source_entry_way_back(finding: dict, rel: str, newest: dict[str, int],
                           commits: list[int]) -> str:
    """What Spark does with a damaged or missing file source log entry, and the way back: the
    newest batch's entry goes aside with that batch's offsets and commit (Spark then lists and
    reads those files again); an older one cannot be rebuilt from the checkpoint."""
    batch = newest.get(rel)
    if batch is None:
        return ("a restart fails: the file source reads every entry of its log since the last "
                ".compact file. Way back: restore this file from a backup of the checkpoint; "
                "moving files cannot rebuild the list of input files it held")
    finding.update(batch=batch, target=batch - 1 if batch > 0 else None,
                   moves=([rel] if finding["damage"] != "missing" else [])
                   + ([f"commits/{batch}"] if batch in commits else [])
                   + [f"offsets/{batch}"])
    files = " and ".join(finding["moves"])
    return (f"a restart fails: the file source reads it back for batch {batch}. Way back: move "
            f"{files} aside: Spark runs batch {batch} again and lists its input files anew")


def sidecar_bytes(raw, inventory: dict, rel: str) -> bytes | None:
    side = sidecar_of(rel)
    return raw.read_bytes(side) if side in inventory else None


def readable_offsets(ckpt, batches) -> dict:
    """batch -> its sources' offsets by name or position, for the batches whose offsets entry reads (a damaged one is
    a finding of its own, not a reason to stop the diagnosis). The hook diagnose.py calls."""
    out = {}
    ids = set(ckpt.offset_batch_ids)
    for b in batches:
        if b in ids:
            try:
                out[b] = ckpt.offsets(b).by_source
            except RunbookError:
                continue
    return out
