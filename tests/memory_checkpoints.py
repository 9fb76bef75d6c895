"""Checkpoints written into files held in memory (``core/fs/memory.py``), shaped as Spark 4.x
writes them (the logs, the operator metadata, a delta file per partition and version, the
``.crc`` sidecars, written as Hadoop writes them, as plain files), so that the change procedure and the runbooks' file logic run
on them without Spark. The state files' bytes are stand-ins: nothing here reads their rows."""
from __future__ import annotations

import json
import time
import zlib

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs.memory import MemoryFiles

ROOT = "mem:/checkpoints/orders"
QUERY_ID = "9b1a9850-608f-42fc-a03f-fdfffbdb537e"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
TRIGGER_MS = 10_000  # the stand-in query's time between batches
HOUR_MS = 3_600_000


def offsets_entry(batch: int, provider: str = HDFS, partitions: int = 2,
                  timestamp_ms: int = 1_700_000_000_000) -> bytes:
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": timestamp_ms + batch * TRIGGER_MS,
            "conf": {"spark.sql.streaming.stateStore.providerClass": provider,
                     "spark.sql.shuffle.partitions": str(partitions)}}
    source = {"offset": 10 * (batch + 1), "timestamp": 1_700_000_000_000 + batch}
    return f"v1\n{json.dumps(meta)}\n{json.dumps(source)}".encode()


def commit_entry(batch: int) -> bytes:
    return f'v1\n{{"nextBatchWatermarkMs":{batch * 1000}}}'.encode()


def operator_metadata(partitions: int, name: str = "stateStoreSave") -> bytes:
    info = {"operatorInfo": {"operatorId": 0, "operatorName": name},
            "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0,
                                "numPartitions": partitions}]}
    return f"v1\n{json.dumps(info)}".encode()


def sidecar(data: bytes, per_sum: int = 512) -> bytes:
    """Hadoop's ``.crc`` sidecar of a local file: a header, then a CRC32 per ``per_sum`` bytes."""
    sums = b"".join(zlib.crc32(data[i:i + per_sum]).to_bytes(4, "big")
                    for i in range(0, len(data), per_sum))
    return b"crc\x00" + per_sum.to_bytes(4, "big") + sums


def schema_file(key: dict, value: dict) -> bytes:
    """A state schema file in format v2: Java's writeUTF of ``v2``, then the key's and the
    value's schema as JSON, each a count of writeUTF chunks."""
    def utf(text: bytes) -> bytes:
        return len(text).to_bytes(2, "big") + text
    out = utf(b"v2")
    for schema in (key, value):
        out += (1).to_bytes(4, "big") + utf(json.dumps(schema).encode())
    return out


def write_checkpoint(files: MemoryFiles, root: str = ROOT, batches: int = 4, partitions: int = 2,
                     provider: str = HDFS, sidecars: bool = True) -> Checkpoint:
    """An aggregation's checkpoint of ``batches`` committed batches on ``partitions``
    partitions, written with the clock of ``files``."""
    fs = files.open(root)

    def put(rel: str, data: bytes) -> None:
        fs.write_bytes(rel, data)
        if sidecars:
            folder, _, name = rel.rpartition("/")
            fs.write_bytes(f"{folder}/.{name}.crc" if folder else f".{name}.crc", sidecar(data))

    put("metadata", json.dumps({"id": QUERY_ID}).encode())
    put("state/0/_metadata/metadata", operator_metadata(partitions))
    for p in range(partitions):
        put(f"state/0/{p}/_metadata/schema", schema_file({"type": "struct", "fields": []},
                                                         {"type": "struct", "fields": []}))
    for batch in range(batches):
        put(f"offsets/{batch}", offsets_entry(batch, provider, partitions))
        for p in range(partitions):
            put(f"state/0/{p}/{batch + 1}.delta", f"rows of batch {batch}, partition {p}".encode())
        put(f"commits/{batch}", commit_entry(batch))
        files.advance(TRIGGER_MS)
    return Checkpoint(files, root)


def stopped_checkpoint(batches: int = 4, partitions: int = 2, **kwargs) -> Checkpoint:
    """A checkpoint whose query stopped an hour ago, in new files held in memory."""
    files = MemoryFiles(now_ms=int(time.time() * 1000) - HOUR_MS)
    ckpt = write_checkpoint(files, batches=batches, partitions=partitions, **kwargs)
    files.now_ms = int(time.time() * 1000)  # what is written from now on, is written now
    return ckpt


def snapshot(files: MemoryFiles) -> dict[str, bytes]:
    """Every file of the file system, by path: its bytes."""
    return {path: f.data for path, f in files.files.items()}


def below(files: MemoryFiles, root: str) -> dict[str, bytes]:
    """The files below ``root``, by path relative to it: their bytes."""
    prefix = root.removeprefix("mem:").rstrip("/") + "/"
    return {path[len(prefix):]: f.data for path, f in files.files.items()
            if path.startswith(prefix)}
