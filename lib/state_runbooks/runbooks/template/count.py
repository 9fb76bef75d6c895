"""The template's one step: the rows of each state store, one scan per store."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.store_scan import StoreReport, inspect_stores


@dataclass
class RowCounts:
    """The result the notebook's steps produce, in one object: what ``report.summarize`` reads."""

    reports: list[StoreReport]  # one per store, as Spark's statestore reader read it

    @property
    def total(self) -> int:
        return sum(r.rows for r in self.reports)


def count_rows(ckpt: Checkpoint, operator_id: int = -1, batch_id: int = -1) -> RowCounts:
    """Rows per store at a batch (-1: the last committed): one operator's, or every
    operator's."""
    return RowCounts(inspect_stores(ckpt, batch_id=batch_id, operator_id=operator_id))
