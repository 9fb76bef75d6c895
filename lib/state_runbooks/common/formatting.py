"""How a runbook writes bytes and times for a reader: one way each, whoever prints them."""
from __future__ import annotations

import datetime as dt
import json
import math


def format_bytes(n: float) -> str:
    """``1536`` -> ``1.5 KiB``: binary units, three significant figures."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            if unit == "B":
                return f"{n:,.0f} B"
            return f"{n:,.{max(0, 2 - int(math.log10(max(abs(n), 1))))}f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def format_utc(ms: int | None, zone: bool = True) -> str | None:
    """Epoch milliseconds (a watermark, an event time) as ``1970-01-01 00:00:05[.250] UTC``: the
    milliseconds only when there are some, `` UTC`` unless ``zone`` is False; None stays None."""
    if ms is None:
        return None
    text = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return text + " UTC" if zone else text


def source_offsets_lines(sources: dict) -> list[str]:
    """A batch's source offsets (by source name, or position), one line per source (with a hint
    where Kafka can start there)."""
    lines = []
    for i, offset in sources.items():
        text = json.dumps(offset, sort_keys=True) if not isinstance(offset, str) else offset
        kafka = (isinstance(offset, dict) and offset
                 and all(isinstance(v, dict) for v in offset.values()))
        hint = " (Kafka: use as the option startingOffsets)" if kafka else ""
        lines.append(f"    source {i}: {text}{hint}")
    return lines


def id_ranges(ids: list[int]) -> str:
    """Batch, partition or version ids as ranges: ``[0, 1, 2, 5]`` -> ``0..2, 5``."""
    if not ids:
        return "none"
    out, start, prev = [], ids[0], ids[0]
    for i in ids[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(f"{start}..{prev}" if start != prev else str(start))
        if i is not None:
            start = prev = i
    return ", ".join(out)


def bullet_lines(items: list[str]) -> str:
    """A short list as printed at the end of a demo ("What this showed"): one ``- item`` a line."""
    return "\n".join(f"- {item}" for item in items)


def row_text(value, limit: int = 120) -> str:
    """A state row (a Row, or a struct of one) in one short line: ``{field: value, ...}``, nested
    structs alike, times as Spark shows them; cut at ``limit`` characters."""
    def text(v) -> str:
        if hasattr(v, "asDict"):
            v = v.asDict(recursive=True)
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {text(x)}" for k, x in v.items()) + "}"
        return "null" if v is None else str(v)
    shown = text(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
