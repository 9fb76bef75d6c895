"""The diagnosis of a join at one batch (``diagnose``, ``Diagnosis``): every key classified, and
for the keys asked about or shown, a ``KeyVerdict`` (one key's category and its evidence) and a few
sentences explaining it (``explain``); the keys a run shows (``show_keys``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import reduce

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.formatting import format_utc
from state_runbooks.core.checkpoint import Checkpoint

from .classification import CATEGORIES, _classified
from .history import METHODS, history_method, history_rows, key_history
from .pairs import closest_pair
from .spec import JoinSpec


# -- results ------------------------------------------------------------------------------------
@dataclass
class KeyVerdict:
    """One key's category and the evidence for it (JSON-ready)."""
    key: object  # a string for a single-column key, else a list of the key's values
    category: str
    evidence: dict

    def to_dict(self) -> dict:
        return {"key": self.key, "category": self.category, "evidence": self.evidence}


@dataclass
class Diagnosis:
    """Every key of a join classified at one batch; verdicts with evidence for the keys asked."""
    checkpoint: Checkpoint
    spec: JoinSpec
    batch_id: int
    method: str
    history_start: int  # the first batch whose changes the history covers
    watermark_ms: int  # the watermark batch ``batch_id`` applied (its offsets entry)
    next_watermark_ms: int | None  # the one it committed for the next batch (its commit)
    per_key: object  # pyspark DataFrame: one row per key with its evidence and category
    counts: dict = field(default_factory=dict)  # category -> keys found in the state's history
    history: object = None  # pyspark DataFrame: the rows classified (``history_rows``)
    _watermarks: dict = field(default_factory=dict, repr=False)

    @property
    def total_keys(self) -> int:
        return sum(self.counts.values())

    def watermark_at(self, batch: int) -> int | None:
        """The watermark a batch applied (from its offsets entry)."""
        if batch not in self._watermarks:
            try:
                self._watermarks[batch] = self.checkpoint.offsets(batch).watermark_ms
            except RunbookError:
                self._watermarks[batch] = None
        return self._watermarks[batch]

    # -- keys ------------------------------------------------------------------------------------
    def _normalize(self, item) -> tuple:
        """A key from ``ids_to_verify`` as a tuple of Python values of the key's types."""
        n = len(self.spec.key_fields)
        values = list(item) if isinstance(item, (list, tuple)) else [item]
        if len(values) != n:
            shape = ("a single value" if n == 1 else
                     f"a list of {n} values, {self.spec.key_label()}")
            raise RunbookError(f"ids_to_verify item {item!r} does not fit the join key "
                               f"{self.spec.key_label()}: give each item as {shape}")
        return tuple(_coerce(v, t, item) for v, t in zip(values, self.spec.key_types))

    def _key_out(self, values: tuple):
        if len(values) == 1:
            return str(values[0])
        return [v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
                for v in values]

    def verdicts(self, ids: list) -> list[KeyVerdict]:
        """Verdicts for the given keys, in the order given (a key not in the state: never_seen)."""
        if not isinstance(ids, (list, tuple)):
            raise RunbookError(f"ids_to_verify must be a list of join key values, got {ids!r}")
        wanted = list(dict.fromkeys(self._normalize(i) for i in ids))
        found = self._evidence(wanted)
        return [found.get(key) or self._verdict(key, None) for key in wanted]

    def examples(self, per_category: int = 3) -> list[KeyVerdict]:
        """Up to ``per_category`` keys of each category found, the oldest first (then by key)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        if per_category <= 0:
            return []
        cols = [f"k_{f}" for f in self.spec.key_fields]
        first = F.least(F.coalesce("l_first", F.lit(self.batch_id)),
                        F.coalesce("r_first", F.lit(self.batch_id)))
        ranked = self.per_key.withColumn("_first", first).withColumn(
            "_n", F.row_number().over(Window.partitionBy("category").orderBy("_first", *cols)))
        with spark_errors("choosing example keys"):
            picked = ranked.where(F.col("_n") <= per_category).drop("_first").collect()
        order = list(CATEGORIES)
        picked.sort(key=lambda r: (order.index(r["category"]), r["_n"]))
        return self._verdicts(picked)

    def _verdicts(self, found: list) -> list[KeyVerdict]:
        """Verdicts of rows of ``per_key``, in their order."""
        cols = [f"k_{f}" for f in self.spec.key_fields]
        keys = [tuple(r[c] for c in cols) for r in found]
        times = self._times(found)
        return [self._verdict(key, r, times.get(key, {})) for key, r in zip(keys, found)]

    def _times(self, found: list) -> dict:
        """key -> {"l": [...], "r": [...]}: each side's distinct event times (ms, ascending) of
        rows of ``per_key``. From min and max where those say it all (one time, or none); the
        other keys' from the history, in one Spark job."""
        from pyspark.sql import functions as F
        cols = [f"k_{f}" for f in self.spec.key_fields]
        out, wanted = {}, []
        for r in found:
            key = tuple(r[c] for c in cols)
            out[key] = {p: [] if r[f"{p}_tmin"] is None else [r[f"{p}_tmin"]] for p in "lr"}
            if any(r[f"{p}_tmin"] != r[f"{p}_tmax"] for p in "lr"):
                wanted.append(key)
        if wanted and self.history is not None:
            with spark_errors("reading the event times of the keys shown"):
                read = (self.history.where(_one_of(cols, wanted) & ~F.col("is_delete"))
                        .groupBy(*cols, "is_left")
                        .agg(F.array_sort(F.collect_set("t")).alias("times")).collect())
            for r in read:
                out[tuple(r[c] for c in cols)]["l" if r["is_left"] else "r"] = list(r["times"])
        return out

    # -- evidence --------------------------------------------------------------------------------
    def _evidence(self, keys: list[tuple]) -> dict:
        """Verdicts of the keys found in the state's history, from their rows of ``per_key``."""
        if not keys:
            return {}
        cols = [f"k_{f}" for f in self.spec.key_fields]
        with spark_errors("reading the evidence of the keys shown"):
            found = self.per_key.where(_one_of(cols, keys)).collect()
        return {tuple(r[c] for c in cols): v for r, v in zip(found, self._verdicts(found))}

    def _side_evidence(self, agg, p: str, times: list) -> dict:
        if agg is None:
            return {"rows_now": 0, "times": [], "matched": False, "first_batch": None,
                    "removed_batch": None, "removed_at_watermark": None, "_tmax_now": None,
                    "_present": False}
        removed = agg[f"{p}_removed"]
        return {
            "rows_now": int(agg[f"{p}_rows_now"]),
            "times": [format_utc(t, zone=False) for t in times],
            "matched": bool(agg[f"{p}_matched"]),
            "first_batch": agg[f"{p}_first"],
            "removed_batch": removed,
            "removed_at_watermark": (format_utc(self.watermark_at(removed), zone=False)
                                     if removed is not None else None),
            "_tmax_now": agg[f"{p}_tmax_now"],
            "_present": bool(agg[f"{p}_present"]),
        }

    def _verdict(self, key: tuple, agg, times: dict | None = None) -> KeyVerdict:
        """A key's verdict from its row of ``per_key`` (None: the key is not in the history) and
        each side's event times (``_times``)."""
        spec = self.spec
        times = times or {}
        category = agg["category"] if agg is not None else "never_seen"
        left = self._side_evidence(agg, "l", times.get("l", []))
        right = self._side_evidence(agg, "r", times.get("r", []))
        evidence = {"batch_id": self.batch_id,
                    "watermark": format_utc(self.watermark_ms, zone=False),
                    "next_watermark": format_utc(self.next_watermark_ms, zone=False),
                    "batches": f"{self.history_start}..{self.batch_id}", "method": self.method,
                    "left": left, "right": right}
        for name, side in (("left", left), ("right", right)):
            if side["_present"] != bool(side["rows_now"]):
                evidence["warning"] = (f"the history says the {name} side is "
                                       f"{'' if side['_present'] else 'not '}in the state of batch "
                                       f"{self.batch_id}, the state itself says otherwise")
        if times.get("l") and times.get("r"):
            gap, beyond = closest_pair(times["l"], times["r"], spec.lower_bound_seconds,
                                       spec.upper_bound_seconds)
            evidence.update({"gap_seconds": gap,
                             "allowed_gap_seconds": [-spec.lower_bound_seconds,
                                                     spec.upper_bound_seconds],
                             "beyond_bound_seconds": beyond})
        if category == "joined":
            batches = [agg[c] for c in ("l_first_matched", "r_first_matched") if agg[c] is not None]
            evidence["matched_in_batch"] = min(batches) if batches else None
        if category in ("waiting_for_right", "waiting_for_left"):
            side, bound = ((left, spec.lower_bound_seconds) if category == "waiting_for_right"
                           else (right, spec.upper_bound_seconds))
            if side["_tmax_now"] is not None:
                # Spark evicts a row once the watermark passes its time plus the bound that lets
                # the other side's future rows (all later than the watermark) still match it.
                expiry = side["_tmax_now"] + int(round(bound * 1000))
                evidence["expires_when_watermark_passes"] = format_utc(expiry, zone=False)
                evidence["evicted_by_next_batch"] = (self.next_watermark_ms is not None
                                                     and self.next_watermark_ms > expiry)
        for s in (left, right):
            s.pop("_tmax_now")
            s.pop("_present")
        return KeyVerdict(self._key_out(key), category, evidence)

    def explain(self, verdict: KeyVerdict, day: str | None = None) -> str:
        """A few sentences a person can read, from the evidence alone; with ``day`` (the date every
        time shown shares, from :func:`common_day`), times of day only."""
        return explain(verdict, self.spec, day)


def diagnose(ckpt: Checkpoint, spec: JoinSpec, batch_id: int = -1, method: str = "auto",
             history_start: int | None = None) -> Diagnosis:
    """Classify every key of the join ``spec`` (from ``resolve_join``) at a batch (-1: the last
    committed one).

    ``method``: ``auto`` (the change feed where the provider has one, else the retained batches)
    or one of ``METHODS``. ``history_start``: the first batch of history to read (default: the
    oldest retained batch); a later one reads less and sees less.
    """
    batch = ckpt.resolve_batch(batch_id, spec.operator_id)
    if method == "auto":
        method = history_method(ckpt, spec.operator_id)
    elif method not in METHODS:
        raise RunbookError(f"method {method!r} is not known: use 'auto' or one of "
                           f"{', '.join(METHODS)}")
    oldest, _ = ckpt.retained_batch_range(spec.operator_id)
    start = oldest if history_start is None else history_start
    if not oldest <= start <= batch:
        raise RunbookError(f"history_start {start} is outside {oldest}..{batch}: the retained "
                           f"batches up to the diagnosed one")
    per_key, counts = _classified(
        key_history(ckpt, spec, batch, method, start), spec, batch,
        f"classifying the join keys of operator {spec.operator_id} at batch {batch}",
        lambda: key_history(ckpt, spec, batch, method, start, exact_pairs=True))
    return Diagnosis(ckpt, spec, batch, method, start, ckpt.offsets(batch).watermark_ms,
                     ckpt.next_watermark_ms(batch), per_key, counts,
                     history_rows(ckpt, spec, batch, method, start))


@dataclass
class ShownKeys:
    """The keys a run shows, with their verdicts: those asked about, or with none the oldest of
    each category (what the summary records)."""
    diagnosis: Diagnosis
    verdicts: list[KeyVerdict]
    explained: list[KeyVerdict]  # explained in sentences: every key asked, else one per category


def show_keys(diagnosis: Diagnosis, ids_to_verify: list, examples_per_category: int = 3
              ) -> ShownKeys:
    """The verdicts of ``ids_to_verify``, or with none up to ``examples_per_category`` keys of
    each category, the first of each to be explained."""
    if ids_to_verify:
        verdicts = diagnosis.verdicts(ids_to_verify)
        return ShownKeys(diagnosis, verdicts, verdicts)
    verdicts = diagnosis.examples(examples_per_category)
    explained = [v for i, v in enumerate(verdicts)
                 if i == 0 or v.category != verdicts[i - 1].category]
    return ShownKeys(diagnosis, verdicts, explained)


def _one_of(cols: list[str], keys: list[tuple]):
    """A filter: the key columns ``cols`` equal one of ``keys``."""
    from pyspark.sql import functions as F
    return reduce(lambda a, b: a | b, [
        reduce(lambda x, y: x & y, [F.col(c) == F.lit(v) for c, v in zip(cols, key)])
        for key in keys])


_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{3})?")


def _evidence_times(verdict: KeyVerdict) -> list[str]:
    return [m.group(0) for m in _TIME.finditer(str(verdict.evidence))]


def common_day(verdicts: list[KeyVerdict]) -> str | None:
    """The date (``YYYY-MM-DD``) every time in the verdicts' evidence falls on, if they share one:
    then a report says it once and shows times of day only."""
    days = {t[:10] for v in verdicts for t in _evidence_times(v)}
    return days.pop() if len(days) == 1 else None


def explain(verdict: KeyVerdict, spec: JoinSpec, day: str | None = None) -> str:
    """A few sentences explaining a verdict, from its evidence alone; times of day only when
    ``day`` is the date they all share."""
    text = _explain(verdict, spec)
    return text.replace(f"{day} ", "") if day else text


def _explain(verdict: KeyVerdict, spec: JoinSpec) -> str:
    e, cat = verdict.evidence, verdict.category
    key = (verdict.key if isinstance(verdict.key, str)
           else "(" + ", ".join(map(str, verdict.key)) + ")")
    sides = {"left": (e["left"], spec.left.time_column),
             "right": (e["right"], spec.right.time_column)}

    def row(name: str) -> str:
        side, column = sides[name]
        where = ("in the state" if side["rows_now"] else
                 f"evicted in batch {side['removed_batch']}, whose watermark was "
                 f"{side['removed_at_watermark']}")
        plural = "rows" if len(side["times"]) > 1 else "row"
        return f"the {name} {plural} ({column} {', '.join(side['times'])}, {where})"

    def gap() -> str:
        lo, hi = e["allowed_gap_seconds"]
        return (f"{spec.left.time_column} - {spec.right.time_column} = {e['gap_seconds']:+g} s, "
                f"allowed {lo:+g} s to {hi:+g} s")

    head = f"{key}: {cat}."
    if cat == "joined":
        when = f" in batch {e['matched_in_batch']}" if e.get("matched_in_batch") is not None else ""
        pair = f" ({gap()})" if e.get("gap_seconds") is not None else ""
        met = " and ".join(row(n) for n in ("left", "right") if sides[n][0]["times"])
        return (f"{head} {_cap(met)}: Spark marked them matched{when}{pair}, so the join emitted "
                "the pair.")
    if cat in ("waiting_for_right", "waiting_for_left"):
        here, other = ("left", "right") if cat == "waiting_for_right" else ("right", "left")
        soon = (f" The next batch evicts it: it applies the watermark {e['next_watermark']}."
                if e.get("evicted_by_next_batch") else "")
        text = (f"{head} {_cap(row(here))}, unmatched; no {other} row with this key reached the "
                f"state in batches {e['batches']}.")
        if "expires_when_watermark_passes" in e:
            text += (f" A {other} row still joins if its {sides[other][1]} fits the time condition "
                     f"and it arrives while the watermark is at most "
                     f"{e['expires_when_watermark_passes']} (batch {e['batch_id']} applied "
                     f"{e['watermark']}): the first batch that applies a later one evicts the "
                     f"{here} row.{soon}")
        return text
    outer = (" In a left outer join, Spark emitted the left row with nulls for the right side "
             "when it evicted it." if e["left"]["removed_batch"] is not None else "")
    if cat == "outside_time_bounds":
        return (f"{head} Both sides reached the state: {row('left')}; {row('right')}. The closest "
                f"pair is {e['beyond_bound_seconds']:g} s outside the time condition ({gap()}), "
                f"so Spark never matched them.{outer}")
    if cat == "evicted_by_watermark":
        parts = []
        for name in ("left", "right"):
            side, column = sides[name]
            if side["removed_batch"] is not None:
                parts.append(f"{row(name)} waited unmatched until the watermark removed it")
            elif side["times"]:
                parts.append(f"the {name} row ({column} {', '.join(side['times'])}) arrived in "
                             f"batch {side['first_batch']}, after that")
        never = [n for n in ("left", "right") if not sides[n][0]["times"]]
        tail = f"; no {never[0]} row with this key reached the state" if never else ""
        return f"{head} {_cap('; '.join(parts))}{tail}.{outer}"
    if cat == "unmatched_within_bounds":
        return (f"{head} Both sides were in the state together and a pair fits the bounds given "
                f"({gap()}), yet Spark did not mark them matched: the query's condition is more "
                "than the key and these bounds (another predicate, or other bounds).")
    return (f"{head} Neither side reached the join's state in batches {e['batches']}: the rows "
            "were filtered before the join, dropped as late (behind the watermark when they "
            "arrived), carry a different key, or were never sent.")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _coerce(value, dtype, item):
    from pyspark.sql import types as T
    try:
        if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if isinstance(dtype, (T.FloatType, T.DoubleType)):
            return float(value)
        if isinstance(dtype, T.BooleanType):
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            if isinstance(value, bool):
                return value
            raise ValueError(value)
        if isinstance(dtype, T.StringType):
            return str(value)
    except (TypeError, ValueError):
        raise RunbookError(f"ids_to_verify item {item!r}: {value!r} is not a "
                           f"{dtype.simpleString()}, the type of the join key") from None
    raise RunbookError(f"ids_to_verify: join keys of type {dtype.simpleString()} are not supported "
                       "(string, integer, floating point and boolean keys are)")
