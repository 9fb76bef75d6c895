"""Try it yourself: a stricter threshold, and how many checkpoints it flags."""
from __future__ import annotations

from state_runbooks.running.exercise import Exercise

from .fleet import FleetRun
from .thresholds import replace_threshold

MAX_FILES = 3


def try_it(run: FleetRun) -> Exercise:
    """With max_files_per_partition=3, how many checkpoints have a partition with more files?"""
    flagged = [e for e in run.examinations
               if (e.figures.get("max_files_per_partition") or 0) > MAX_FILES]
    t = replace_threshold(run.thresholds, max_files_per_partition=MAX_FILES)
    return Exercise(f"With thresholds={{max_files_per_partition: {MAX_FILES}}}, how many "
                    "checkpoints get a many_files warning?", len(flagged),
                    f"{len(flagged)} checkpoints keep more than {t.max_files_per_partition} state "
                    "files in one partition: each batch writes a file per partition, and the "
                    "checkpoints that ran more batches (or keep a snapshot beside each delta) "
                    "cross it first")
