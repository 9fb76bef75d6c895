"""How a runbook writes bytes and times for a reader: one way each, whoever prints them."""
from __future__ import annotations

import datetime as dt
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
