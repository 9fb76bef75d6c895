"""The template's demo: the smallest checkpoint with state, and the answer known in advance."""
from __future__ import annotations

# A deduplication with a 5 s watermark: 20 events per batch carry 10 distinct ids (each arrives
# twice), each batch is 1 s of event time; four batches.
DEMO = {"workload": "dedup", "batches": 4, "rows_per_batch": 20}


def expected_rows(batches: int) -> int:
    """Rows the demo's store holds after ``batches`` batches: one per id, and nothing has
    expired yet (the watermark trails the newest event by 5 s, longer than four batches span)."""
    return batches * DEMO["rows_per_batch"] // 2
