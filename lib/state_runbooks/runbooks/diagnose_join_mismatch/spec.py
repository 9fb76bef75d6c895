"""The join as read from the checkpoint: which operator it is, its key, each side's time column
and watermark, and the time bounds of its condition (``JoinSpec``, ``JoinSide``, ``TimeBounds``).
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError
from state_runbooks.core import operators
from state_runbooks.core.checkpoint import Checkpoint, OperatorInfo

JOIN_OPERATOR = "symmetricHashJoin"
SIDES = ("left", "right")
ROWS_STORE = "{side}-keyWithIndexToValue"


# -- the join: operator, key, time columns, bounds ------------------------------------------------
@dataclass(frozen=True)
class JoinSide:
    side: str
    time_column: str
    time_source: str  # "parameter" or "checkpoint" (the column carrying the watermark)
    watermark_column: str | None  # the column the state schema marks with the watermark delay
    watermark_delay_ms: int | None
    value_columns: tuple[str, ...]


@dataclass(frozen=True)
class JoinSpec:
    """A stream-stream join as read from the checkpoint, plus the time condition given."""
    operator_id: int
    key_fields: tuple[str, ...]  # field0, field1, ... in the state key (the index excluded)
    key_types: tuple  # Spark DataTypes of those fields
    key_names: tuple[str | None, ...]  # the value column each key field equals, where one does
    left: JoinSide
    right: JoinSide
    lower_bound_seconds: float
    upper_bound_seconds: float
    bounds: "TimeBounds | None" = None  # read from the checkpoint; None: given as parameters

    @property
    def composite(self) -> bool:
        return len(self.key_fields) > 1

    def side(self, name: str) -> JoinSide:
        return self.left if name == "left" else self.right

    def key_label(self) -> str:
        names = [n or f for n, f in zip(self.key_names, self.key_fields)]
        return names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"

    def condition_text(self) -> str:
        lt, rt = self.left.time_column, self.right.time_column
        return (f"{lt} >= {rt} - {_secs(self.lower_bound_seconds)} AND "
                f"{lt} <= {rt} + {_secs(self.upper_bound_seconds)}")

    def describe(self) -> list[str]:
        """Where each part of the join came from, one line each."""
        lines = [f"operator {self.operator_id} ({JOIN_OPERATOR}), join key {self.key_label()}"
                 + (" (composite)" if self.composite else "")]
        for s in (self.left, self.right):
            source = ("given as a parameter" if s.time_source == "parameter"
                      else "read from the checkpoint: the column that carries the watermark")
            delay = (f"; watermark delay {s.watermark_delay_ms / 1000:g} s on "
                     f"{s.watermark_column}" if s.watermark_delay_ms is not None else
                     "; no watermark column in the state schema")
            lines.append(f"{s.side} time column: {s.time_column} ({source}{delay})")
        if self.bounds is None:
            lines.append(f"time condition: {self.condition_text()} (bounds given as parameters)")
        else:
            lines.append(f"time condition: {self.condition_text()} (bounds read from the "
                         "checkpoint)")
            lines += self.bounds.lines()
        return lines


def join_operators(ckpt: Checkpoint) -> list[OperatorInfo]:
    """The stream-stream join operators of a checkpoint, as the operator model knows them (by
    name, or without operator metadata by their four store folders)."""
    return [op for op in ckpt.operators()
            if operators.describe(op.operator_name, [s.store_name for s in op.stores]) == "join"]


def find_join_operator(ckpt: Checkpoint, operator_id: int = -1) -> OperatorInfo:
    """``-1``: the only stream-stream join; otherwise that operator, which must be a join."""
    joins = join_operators(ckpt)
    listing = ", ".join(f"{op.operator_id} ({op.operator_name})" for op in ckpt.operators())
    if operator_id == -1:
        if not joins:
            raise RunbookError(f"checkpoint {ckpt.root} has no stream-stream join "
                               f"({JOIN_OPERATOR}) operator; its operators: {listing}")
        if len(joins) > 1:
            ids = ", ".join(str(op.operator_id) for op in joins)
            raise RunbookError(f"checkpoint {ckpt.root} has {len(joins)} stream-stream joins "
                               f"(operators {ids}): pass operator_id to choose one")
        return joins[0]
    operator = ckpt.operator(operator_id)
    if operator not in joins:
        valid = ", ".join(str(op.operator_id) for op in joins) or "none"
        raise RunbookError(f"operator {operator_id} ({operator.operator_name}) is not a "
                           f"stream-stream join; join operators: {valid}")
    return operator


@dataclass(frozen=True)
class TimeBounds:
    """The join's time bounds as the watermark's evictions show them.

    Spark evicts a left row once no future right row can match it: when its time plus the lower
    bound falls behind the watermark; a right row, its time plus the upper bound. So the rows a
    batch evicted put each bound below ``watermark - time`` of that batch, and the rows still in
    the state put it at or above ``watermark - time``. The smallest bound consistent with both is
    taken, known to within ``lower_max - lower`` (the watermark's step between batches).
    """
    lower: float  # seconds: the smallest value the rows kept allow
    lower_max: float  # seconds: the evicted rows put it below this
    upper: float
    upper_max: float
    batch_id: int

    def lines(self) -> list[str]:
        return [f"  lower bound: at least {self.lower:g} s (shown by the left rows still in "
                f"the state) and below {self.lower_max:g} s (shown by those the watermark "
                f"evicted); taken as {self.lower:g} s",
                f"  upper bound: at least {self.upper:g} s and below {self.upper_max:g} s (the "
                f"same reading of the right rows); taken as {self.upper:g} s"]


def _secs(seconds: float) -> str:
    return f"INTERVAL {seconds:g} SECONDS"
