"""Diagnose a checkpoint: structure, a load test at the last committed batch, the last good batch by
bisection (about log2(batches) loads; the first cut goes where the files point), and the file at
fault of every unit that does not load, found by Spark's own loads where no ``.crc`` sidecar tells
(object stores, Spark Connect): the unit at the first bad batch, then the change feed of single
versions (one ``.delta`` or ``.changelog`` each), the partition taken from Spark's error.

Spark's reader skips a partition folder that is missing, while a restarted query fails on it, so
a batch only counts as good when its files are all there and sound *and* the reader loads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.core.checkpoint import STATE_FILE_PATTERN, Checkpoint
from state_runbooks.core.fs.base import is_checksum_file
from state_runbooks.core.operators import StateUnit
from state_runbooks.core.state_loads import (
    LoadResult,
    changes_load,
    load_batch,
    load_unit,
    load_units,
)
from state_runbooks.safety.activity import QUIET_MINUTES, Activity, check_activity
from state_runbooks.safety.watch import as_listed, in_progress

from .log_damage import readable_offsets
from .structure import INCREMENTAL_KINDS_SUFFIXES, Problem, Structure, store_folder


@dataclass
class Probe:
    """One step of the search for the last good batch."""
    batch_id: int
    ok: bool
    by: str  # "load" (a Spark job read every store) or "files" (a needed file is missing or bad)
    detail: str = ""


@dataclass
class Diagnosis:
    root: str
    provider: str  # hdfs, rocksdb, rocksdb_changelog
    offset_batch_ids: list[int]
    commit_batch_ids: list[int]
    in_flight: list[int]
    operators: list[dict]  # {operator_id, operator_name, stores, partitions, versions}
    retained: tuple[int, int] | None  # batches a rollback can go back to
    min_batches_to_retain: int
    files_checked: int
    sidecars_checked: int  # files whose length was compared with their .crc sidecar
    problems: list[Problem]
    load_test: list[LoadResult]
    probes: list[Probe]
    last_good_batch_id: int | None
    can_replay_from_start: bool
    offsets_after: dict = field(default_factory=dict)  # batch -> sources' offsets after it
    # Batches after the last good one whose sources' offsets equal the batch before's: they read
    # no input (they advanced the watermark or ran timeouts), and a rollback does not re-run them
    # until new data arrives.
    no_input_batches: list = field(default_factory=list)
    locating_reads: int = 0  # Spark reads that named the files at fault (after the bisection)
    content_checked: int = 0  # files whose bytes were compared with their .crc sidecar
    content_checked_by_spark: int = 0  # of those, by Spark's own load (through the checksum layer)
    # Every file as the diagnosis listed it (sidecars included): the plan works from the same list.
    inventory: dict = field(default_factory=dict, repr=False)
    # The activity guard's answer, taken first. On an active checkpoint every pass judges the
    # batches committed when its listing was taken, and a problem counts only when the next pass,
    # on a new listing, finds it again: ``relisted`` names those the query changed meanwhile.
    activity: Activity | None = None
    passes: int = 1
    relisted: list[str] = field(default_factory=list)
    unconfirmed: bool = False  # active, and no two passes agreed: nothing is confirmed

    @property
    def active(self) -> bool:
        return bool(self.activity and self.activity.looks_active)

    @property
    def last_committed_batch_id(self) -> int | None:
        return self.commit_batch_ids[-1] if self.commit_batch_ids else None

    @property
    def loads(self) -> int:
        """Spark jobs that loaded state: the load test's (one per store) and the bisection's."""
        return len(self.load_test) + sum(p.by == "load" for p in self.probes[1:])

    @property
    def nothing_broken(self) -> bool:
        return (not self.problems and not self.reader_limits
                and self.last_good_batch_id == self.last_committed_batch_id)

    @property
    def reader_limits(self) -> list[LoadResult]:
        """Units Spark's reader cannot read at all (not evidence of damage)."""
        return [r for r in self.load_test if r.reader_limit]

    @property
    def state_does_not_load(self) -> bool:
        """Evidence that a restart cannot load the state of the last committed batch: Spark's
        store code failed on it, or a file its provider needs is missing or damaged."""
        c = self.last_committed_batch_id
        return (bool(self.operators) and c is not None and self.last_good_batch_id != c
                and not self.unconfirmed)

    def activity_lines(self) -> list[str]:
        """What the activity guard saw, first; on an active checkpoint, what was judged."""
        if self.activity is None:
            return []
        if not self.active:
            return [f"the query looks stopped ({self.activity.seen})"]
        lines = ["the query looks active: " + "; ".join(self.activity.reasons),
                 (f"judged: the batches committed when the diagnosis listed the checkpoint (up to "
                  f"{self.last_committed_batch_id}), from that one listing; "
                  + self.passes_words())]
        lines += [f"re-listed, changed by the query meanwhile (not reported): {r}"
                  for r in self.relisted[:5]]
        if self.unconfirmed:
            lines.append("the query changed the files under every pass: nothing is confirmed")
        return lines

    def passes_words(self) -> str:
        """What the passes were, in words: a pass is the whole diagnosis on a new listing of the
        checkpoint, and on an active one a problem counts only when two passes in a row find it
        (the query may clean up or replace a file between two listings)."""
        what = (f"{self.passes} pass{'es' if self.passes != 1 else ''} (a pass: the whole "
                "diagnosis on a new listing of the checkpoint)")
        if self.passes == 1:
            return f"{what}: it found nothing to confirm on a second one"
        return (f"{what}: a problem counts only when two passes in a row find it, since the "
                "query may clean up or replace a file between two listings")

    def broken(self) -> list[dict]:
        return [p.summary() for p in self.problems]

    def verdict(self) -> str:
        c, g = self.last_committed_batch_id, self.last_good_batch_id
        if self.unconfirmed:
            return (f"unknown: the query looks active and changed the files under each of "
                    f"{self.passes} passes, so no problem was seen twice; run again when it is "
                    "stopped (or quieter)")
        if c is None:
            return "no batch was committed yet: there is no state to recover"
        if not self.operators:
            logs = ("the offsets and commits logs are sound" if not self.problems else
                    f"{len(self.problems)} problem(s) in the logs (see the list)")
            return f"no stateful operator: there is no state to load; {logs}"
        if self.reader_limits and not self.state_does_not_load:
            units = ", ".join(f"{r.label} ({r.error_class or 'error'})" for r in self.reader_limits)
            files = ("every file the last committed batch needs is there" +
                     (" and matches its .crc sidecar" if self.content_checked else "")
                     if not self.problems else f"{len(self.problems)} problem(s) in the files "
                     "(see the list)")
            return (f"unknown: Spark's reader cannot read {units}, so no load can show whether "
                    f"that state is sound; here is what the files say: {files}. This is not "
                    "evidence of damage: nothing is planned")
        if self.nothing_broken:
            return f"nothing is broken: the state loads at the last committed batch {c}"
        if g == c:
            only_in_flight = all(p.problem.startswith("offsets entry without a commit")
                                 for p in self.problems)
            if only_in_flight:
                return (f"nothing is broken in the committed state: batch {self.in_flight[0]} was "
                        f"in flight and a restart re-runs it; the last good batch is {c}")
            n = len(self.problems)
            return (f"the state loads at the last committed batch {c}; {n} problem"
                    f"{'s' if n > 1 else ''} in the files (see the list), none of which stops a "
                    "restart")
        if g is None:
            start = (" (batch 0 is retained: a rollback can still replay everything from the "
                     "sources' start)") if self.can_replay_from_start else ""
            return f"no retained batch loads{start}"
        return (f"the state of the last committed batch {c} does not load; the last good batch is "
                f"{g}")


# -- diagnose --------------------------------------------------------------------------------------
MAX_PASSES = 3  # on an active checkpoint: a problem must show in two passes in a row


def diagnose(ckpt: Checkpoint, quiet_minutes: float = QUIET_MINUTES) -> Diagnosis:
    """Structure, load test at the last committed batch, the last good batch by bisection, and
    the file at fault of every unit that does not load.

    The activity guard runs first. Each pass judges the checkpoint as one listing saw it (the
    logs are listed before the state folders, so every file a committed batch needs is in it).
    On an active checkpoint a problem is reported only when the next pass, on a new listing,
    finds it again: a file the query's maintenance cleaned up or replaced meanwhile is re-listed,
    not reported missing."""
    activity = check_activity(ckpt, quiet_minutes)
    diag = _diagnose_once(ckpt, activity.looks_active)
    diag.activity = activity
    if not activity.looks_active:
        return diag
    relisted: list[str] = []
    passes, confirmed = 1, not _suspect(diag)
    while not confirmed and passes < MAX_PASSES:
        again = _diagnose_once(ckpt, True)
        passes += 1
        confirmed = _findings(again) == _findings(diag) or not _suspect(again)
        seen = _findings(again)[0]
        relisted += [f"{p.path}: {p.problem}" for p in diag.problems
                     if not p.problem.startswith(IN_FLIGHT) and p.path not in seen]
        diag = again
    diag.activity, diag.passes, diag.relisted = activity, passes, relisted
    diag.unconfirmed = not confirmed
    if diag.unconfirmed:  # seen once each, never twice: not reported as problems
        diag.relisted += [f"{p.path}: {p.problem} (not confirmed)" for p in diag.problems]
        diag.problems = [p for p in diag.problems if p.problem.startswith(IN_FLIGHT)]
    return diag


IN_FLIGHT = "offsets entry without a commit"


def _suspect(diag: Diagnosis) -> bool:
    """Whether a pass found anything to confirm (a batch in flight is normal while running)."""
    return (any(not p.problem.startswith(IN_FLIGHT) for p in diag.problems)
            or any(r.damaged for r in diag.load_test) or diag.state_does_not_load)


def _findings(diag: Diagnosis) -> tuple[frozenset, bool]:
    return (frozenset(p.path for p in diag.problems if not p.problem.startswith(IN_FLIGHT)),
            diag.state_does_not_load)


def _diagnose_once(ckpt: Checkpoint, active: bool) -> Diagnosis:
    listing = ckpt.inventory()  # one walk of the whole tree, newly taken: logs first
    # Judge the checkpoint as that walk saw it: its offsets and commits, not a later listing's;
    # files a writer is still writing (temporary names) are not the checkpoint's yet.
    inventory = ({rel: e for rel, e in listing.items() if not in_progress(rel)} if active
                 else listing)
    ckpt = as_listed(ckpt, inventory)
    structure = Structure(ckpt, inventory)
    last = structure.last_committed
    load_test: list[LoadResult] = []
    probes: list[Probe] = []
    retained = structure.retained()
    reads = 0
    last_good = last if not structure.operators else None
    if last is not None and retained is not None:
        units = load_units(ckpt)
        load_test = [load_unit(ckpt, u, last, structure.on_disk(u)) for u in units]
        for unit, loaded in zip(units, load_test):
            if loaded.ok:
                structure.loaded_by_spark(unit, last + 1)
        readable = [u for u, r in zip(units, load_test) if not r.reader_limit]
        files_ok, why = structure.batch_files_ok(last)
        latest_ok = files_ok and not any(r.damaged for r in load_test)
        probes.append(Probe(last, latest_ok, "load" if files_ok else "files",
                            why or _first_failure(load_test)))
        if latest_ok:
            last_good = last
        else:
            last_good = _bisect(ckpt, structure, readable, retained[0], last, probes)
            reads = _name_files_at_fault(ckpt, structure, units, load_test, last_good,
                                         retained[0])
    problems = sorted(structure.problems.values(),
                      key=lambda p: (p.first_batch_id is None, p.first_batch_id or 0, p.path))
    offsets_after = readable_offsets(ckpt, {last_good, last} - {None})
    rolled_back = (readable_offsets(ckpt, range(last_good, last + 1))
                   if last is not None and last_good is not None and last_good < last else {})
    no_input = [b for b in range(last_good + 1, last + 1) if b in rolled_back
                and rolled_back.get(b - 1) == rolled_back[b]] if rolled_back else []
    return Diagnosis(
        root=ckpt.root, provider=structure.provider, offset_batch_ids=structure.offsets,
        commit_batch_ids=structure.commits, in_flight=structure.in_flight,
        operators=structure.operators, retained=retained,
        min_batches_to_retain=ckpt.min_batches_to_retain,
        files_checked=sum(not is_checksum_file(r) for r in inventory),
        sidecars_checked=structure.sidecars_checked, problems=problems, load_test=load_test,
        probes=probes, last_good_batch_id=last_good,
        can_replay_from_start=bool(retained) and retained[0] == 0 and last_good is None
        and 0 in structure.offsets, offsets_after=offsets_after, no_input_batches=no_input,
        locating_reads=reads,
        content_checked=len(structure.content_checked),
        content_checked_by_spark=len(structure.checked_by_spark_load), inventory=inventory)


def _first_failure(results: list[LoadResult]) -> str:
    for r in results:
        if r.damaged:
            return f"{r.label}: {r.error_class or 'error'}"
    return ""


def _name_files_at_fault(ckpt: Checkpoint, structure: Structure, units: list[StateUnit],
                         results: list[LoadResult], last_good: int | None, lo: int) -> int:
    """For each unit whose load failed in Spark's store code, name the file at fault and keep
    Spark's error class: the first missing or damaged file its state needs, else the file found
    by Spark's own loads (the unit at the first bad batch, then single versions through the
    change feed), so it works without ``.crc`` sidecars (object stores, Spark Connect). Returns
    the number of Spark reads it took."""
    reads = [0]
    for unit, failed in zip(units, results):
        if not failed.damaged:
            continue
        good, failure = last_good, failed
        first_bad = lo if last_good is None else last_good + 1
        on_disk_bad = first_bad_file(structure, unit.operator_id, unit.files_store,
                                     failed.batch_id + 1)
        if first_bad < failed.batch_id and not on_disk_bad:  # the files do not tell: ask Spark
            there = load_unit(ckpt, unit, first_bad, structure.on_disk(unit))
            reads[0] += 1
            if there.damaged:
                failure = there
            elif there.ok:
                good = first_bad
        path, how = _locate(ckpt, structure, unit, failure, good, reads)
        failed.path = path
        known = structure.problems.get(path)
        if known is None:
            structure.problems[path] = Problem(
                path, f"Spark cannot load the state of batch {failure.batch_id}: {how}",
                failure.error_class, failure.batch_id)
        elif known.error_class is None:
            known.error_class = failure.error_class
    return reads[0]


def _locate(ckpt: Checkpoint, structure: Structure, unit: StateUnit, failure: LoadResult,
            good: int | None, reads: list[int]) -> tuple[str, str]:
    """The file at fault of a unit that does not load at ``failure.batch_id`` while it loads at
    ``good`` (None: at no retained batch), and how it was found."""
    op, store, version = unit.operator_id, unit.files_store, failure.batch_id + 1
    bad = first_bad_file(structure, op, store, version)
    if bad:
        return bad, "missing or damaged on disk"
    if failure.path and failure.path in structure.inventory:
        return failure.path, "named in Spark's error"
    on_disk = structure.on_disk(unit)
    partitions = failure.partitions or tuple(on_disk)
    candidates = []
    for p in partitions:
        key = (op, store, p)
        before = set(structure.needs(key, good + 1) or []) if good is not None else set()
        candidates += [rel for rel in structure.needs(key, version) or [] if rel not in before]
    incremental = sorted({_version_of(rel) for rel in candidates
                          if rel.endswith(INCREMENTAL_KINDS_SUFFIXES)})
    if incremental and structure.provider in ("hdfs", "rocksdb_changelog"):
        found = _first_unreadable_changes(ckpt, unit, incremental[0], incremental[-1], on_disk,
                                          reads)
        if found is True:  # every version's changes read: the damage is in a snapshot's files
            candidates = [rel for rel in candidates
                          if not rel.endswith(INCREMENTAL_KINDS_SUFFIXES)]
        elif found is not None:
            version_at_fault, named, path = found
            if path and path in structure.inventory:
                return path, f"version {version_at_fault}'s changes do not read"
            hits = [rel for rel in candidates if _version_of(rel) == version_at_fault
                    and rel.endswith(INCREMENTAL_KINDS_SUFFIXES)
                    and (not named or _partition_of(rel) in named)]
            if hits:
                return hits[0], (f"Spark's change feed of version {version_at_fault} alone fails "
                                 "on it" + ("" if len(hits) == 1 else
                                            f" (or on {', '.join(hits[1:])})"))
    if not candidates:
        where = store_folder(op, partitions[0], store) if len(partitions) == 1 else f"state/{op}"
        return where, "Spark's error names no file, and each file it needs reads on its own"
    others = f" (or one of {', '.join(candidates[1:4])}{'...' if len(candidates) > 4 else ''})" \
        if len(candidates) > 1 else ""
    return candidates[0], f"the file version {version} adds to what loads{others}"


def _first_unreadable_changes(ckpt: Checkpoint, unit: StateUnit, lo: int, hi: int,
                              on_disk: list[int], reads: list[int]):
    """The first version in ``lo..hi`` whose changes Spark cannot read, with the partitions and
    file its error names, by bisection (about log2 single reads); True when all read, None when
    the reader refuses the change feed for this unit."""
    ok, named, path = changes_load(ckpt, unit, lo, hi, on_disk)
    reads[0] += 1
    if ok is not False:
        return ok
    while lo < hi:
        mid = (lo + hi) // 2
        ok, first_named, first_path = changes_load(ckpt, unit, lo, mid, on_disk)
        reads[0] += 1
        if ok is None:
            return None
        if ok:
            lo = mid + 1
        else:
            hi, named, path = mid, first_named, first_path
    return lo, named, path


def _version_of(rel: str) -> int:
    match = STATE_FILE_PATTERN.match(rel.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else -1


def _partition_of(rel: str) -> int:
    return int(rel.split("/")[2])


def first_bad_file(structure: Structure, operator_id: int, store_name: str, version: int
                    ) -> str | None:
    for part in structure.missing_partitions.get(operator_id, []):
        return f"state/{operator_id}/{part}"
    for key in sorted(structure.chains):
        if key[:2] == (operator_id, store_name):
            for rel in structure.needs(key, version) or []:
                if rel not in structure.inventory or rel in structure.bad_files:
                    return rel
    return None


def _bisect(ckpt: Checkpoint, structure: Structure, units: list[StateUnit], lo: int, bad: int,
            probes: list[Probe]) -> int | None:
    """The newest good batch below ``bad`` (known bad) down to ``lo``; None if none is good.

    Invariant: ``good`` is good (``lo - 1`` stands for "before the range") and ``bad`` is bad.
    A batch whose files are missing or damaged is bad without a Spark job. When the files point
    at the answer (a missing or damaged file explains why ``bad`` is bad), the first cut goes there:
    the newest batch whose files are all sound, which one load confirms. Otherwise (damage only
    Spark sees, as on object stores, which keep no ``.crc`` sidecars) plain bisection: at most
    ceil(log2(bad - lo + 1)) loads."""
    good = lo - 1
    sound = next((b for b in range(bad - 1, good, -1) if structure.batch_files_ok(b)[0]), None)
    if sound is None:  # no batch of the range has all its files: nothing can load
        if good + 1 < bad:
            probes.append(Probe(good + 1, False, "files", structure.batch_files_ok(good + 1)[1]))
        return None
    if sound + 1 < bad or not structure.batch_files_ok(bad)[0]:  # the files point at the answer
        if sound + 1 < bad:
            bad = sound + 1
            probes.append(Probe(bad, False, "files", structure.batch_files_ok(bad)[1]))
        ok, why = load_batch(ckpt, sound, units)
        probes.append(Probe(sound, ok, "load", why))
        if ok:
            return sound
        bad = sound
    while bad - good > 1:
        mid = (good + bad) // 2
        files_ok, why = structure.batch_files_ok(mid)
        if files_ok:
            ok, why = load_batch(ckpt, mid, units)
            probes.append(Probe(mid, ok, "load", why))
        else:
            ok = False
            probes.append(Probe(mid, ok, "files", why))
        if ok:
            good = mid
        else:
            bad = mid
    return good if good >= lo else None


def linear_scan(ckpt: Checkpoint) -> int | None:
    """The last good batch the slow way: load every retained batch (the benchmark's baseline)."""
    lo, hi = ckpt.retained_batch_range()
    units = load_units(ckpt)
    last_good = None
    for b in range(lo, hi + 1):
        ok, _ = load_batch(ckpt, b, units)
        if ok:
            last_good = b
    return last_good
