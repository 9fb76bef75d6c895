"""Decoders for event log files in the framings Spark writes, as streams of bytes.

Spark compresses event logs with its own ``CompressionCodec`` streams (``spark.eventLog.compression.codec``),
not with Hadoop's codecs: ``zstd`` is plain zstd frames (zstd-jni), ``lz4`` is lz4-java's
``LZ4BlockOutputStream`` framing, ``snappy`` is snappy-java's ``SnappyOutputStream`` framing. Hadoop's
text reader understands none of the last two (handed an ``.lz4`` or ``.snappy`` event log it runs out of
heap), so these decoders read them chunk by chunk: a multi-GB log never sits in memory whole.
"""
from __future__ import annotations

import io
import struct
from typing import BinaryIO, Iterator

from state_runbooks.common.errors import RunbookError

CODECS = ("none", "zstd", "lz4", "snappy")
IN_PROGRESS = ".inprogress"  # suffix of a single-file log while its application runs

_LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<BiiI")  # token, compressed length, decompressed length, checksum
_LZ4_RAW, _LZ4_COMPRESSED = 0x10, 0x20
_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER_REST = 8  # two big-endian ints after the magic: version and compatible version
_CHUNK = 1 << 20


def codec_of(name: str) -> str:
    """The codec of an event log file from its name (``events_1_<app>.zstd``, ``<app>.lz4.inprogress``)."""
    base = name[: -len(IN_PROGRESS)] if name.endswith(IN_PROGRESS) else name
    suffix = base.rsplit(".", 1)[-1] if "." in base.rsplit("/", 1)[-1] else ""
    if suffix in ("zstd", "zst"):
        return "zstd"
    if suffix in ("lz4", "snappy"):
        return suffix
    if suffix == "lzf":
        raise RunbookError(f"{name}: lzf-compressed event logs are not supported; "
                           "zstd (Spark's default), lz4, snappy and uncompressed logs are")
    return "none"


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    data = stream.read(n)
    while len(data) < n:
        more = stream.read(n - len(data))
        if not more:
            break
        data += more
    return data


def _lz4_chunks(stream: BinaryIO) -> Iterator[bytes]:
    import cramjam
    while True:
        magic = _read_exact(stream, len(_LZ4_MAGIC))
        if len(magic) < len(_LZ4_MAGIC):
            return  # end of stream (or a block the writer has not finished yet)
        if magic != _LZ4_MAGIC:
            raise RunbookError("not an lz4 event log written by Spark: an LZ4Block header is missing")
        header = _read_exact(stream, _LZ4_HEADER.size)
        if len(header) < _LZ4_HEADER.size:
            return
        token, compressed, decompressed, _ = _LZ4_HEADER.unpack(header)
        if decompressed == 0:
            continue  # the empty block that closes each stream; another may follow (appends)
        body = _read_exact(stream, compressed)
        if len(body) < compressed:
            return
        method = token & 0xF0
        yield body if method == _LZ4_RAW else bytes(
            cramjam.lz4.decompress_block(body, output_len=decompressed))


def _snappy_chunks(stream: BinaryIO) -> Iterator[bytes]:
    import cramjam
    while True:
        head = _read_exact(stream, 4)
        if len(head) < 4:
            return
        if head == _SNAPPY_MAGIC[:4]:  # a stream header (the first, or one of an appended stream)
            rest = _read_exact(stream, len(_SNAPPY_MAGIC) - 4 + _SNAPPY_HEADER_REST)
            if rest[: len(_SNAPPY_MAGIC) - 4] != _SNAPPY_MAGIC[4:]:
                raise RunbookError("not a snappy event log written by Spark: bad stream header")
            continue
        (length,) = struct.unpack(">i", head)
        body = _read_exact(stream, length)
        if len(body) < length:
            return
        yield bytes(cramjam.snappy.decompress_raw(body))


def _zstd_chunks(stream: BinaryIO) -> Iterator[bytes]:
    import zstandard
    reader = zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)
    while True:
        try:
            chunk = reader.read(_CHUNK)
        except zstandard.ZstdError:
            return  # a frame the running application has not finished writing
        if not chunk:
            return
        yield chunk


def _raw_chunks(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(_CHUNK):
        yield chunk


def decoded_chunks(stream: BinaryIO, codec: str) -> Iterator[bytes]:
    """The uncompressed bytes of an event log stream, chunk by chunk."""
    decoders = {"none": _raw_chunks, "zstd": _zstd_chunks, "lz4": _lz4_chunks,
                "snappy": _snappy_chunks}
    if codec not in decoders:
        raise RunbookError(f"codec {codec!r} is not known: use one of {', '.join(CODECS)}")
    return decoders[codec](stream)


def lines(stream: BinaryIO, codec: str) -> Iterator[str]:
    """The complete lines (events) of an event log stream; a last line cut short is left out."""
    pending = b""
    for chunk in decoded_chunks(stream, codec):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line:
                yield line.decode("utf-8", errors="replace")


def lines_of_bytes(data: bytes, codec: str) -> Iterator[str]:
    """``lines`` of a log already in memory (read through the session's file access)."""
    return lines(io.BytesIO(data), codec)
