"""Migrate through the one procedure every change follows (:mod:`state_runbooks.safety.change`):
this module says what the migration is, has Spark's state rewriter write the mapped state, and
verifies the result with Spark's own restart check and every store read back.

The rewriter calls the transform once per store with its raw rows; the transform returns the
rows to write instead: the changed stores' rows mapped and encoded as Spark's bytes
(:mod:`.rows`), a column family the change keeps as it is passed through raw (an HDFS-backed
source's stores are read with the ordinary reader and encoded too), all placed by the hash of
their partitioning key.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import first_line
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs
from state_runbooks.core.operators import operator_model
from state_runbooks.core.state_diff import WITH_PARTITION, UnitDiff, diff_frames
from state_runbooks.core.state_placement import key_width_cut
from state_runbooks.core.state_reader import read_unit
from state_runbooks.core.unsafe_row import encode_state_rows
from state_runbooks.query.planning import probe, restart_settings
from state_runbooks.safety import new_batch
from state_runbooks.safety.activity import QUIET_MINUTES
from state_runbooks.safety.change import apply_change, last_committed, undo_change
from state_runbooks.safety.requirements import pinned_kind, rocksdb_class
from state_runbooks.safety.safekeeping import (
    Change,
    Outcome,
    RewriteOutcome,
    changed_files,
    live_writer_signs,
)
from state_runbooks.safety.state_rewriter import as_raw_rows, run_rewriter

from . import location
from .checks import Checks
from .plan import Plan, unit_of
from .rows import PK, mapped_rows, placed, raw_with_key, unchanged_rows
from .schema_change import SchemaChange

MIGRATE = Change("migration", ".migrate-", "migrate_state", ("migrate", "undo"))


@dataclass
class Migrated(RewriteOutcome):
    restart_check: str | None = None  # Spark's restart check on the result: "passes" or the error
    stores: list[UnitDiff] = field(default_factory=list)  # every store read back
    # What it acted on: the runbook's one result holds them, for the summary and the demo.
    checks: Checks | None = field(default=None, repr=False)
    change: SchemaChange | None = field(default=None, repr=False)
    plan: Plan | None = field(default=None, repr=False)  # None: the state could not be read
    fill: dict = field(default_factory=dict, repr=False)
    job: object = field(default=None, repr=False)  # the changed query, as the job builds it


class _Migrate:
    """What 10 tells the procedure: the change, Spark's call, its verification."""
    change = MIGRATE

    def __init__(self, ckpt: Checkpoint, checks: Checks, schema: SchemaChange, plan: Plan,
                 fill: dict, job, new_location):
        self.ckpt, self.checks, self.schema, self.plan = ckpt, checks, schema, plan
        self.fill, self.job, self.new = fill, job, new_location
        self.replaced: list[str] = []  # in place: the checkpoint's files the batch replaced

    def does(self) -> str:
        where = self.checks.output_path or "the checkpoint, as a new batch"
        batch = self.plan.batch_id if self.plan else last_committed(self.ckpt, self.checks)
        return (f"has Spark's state rewriter write the state of batch {batch} in the changed "
                f"query's schema ({len(self.schema.changed)} store(s) mapped) into {where}, "
                "runs Spark's restart check of the changed query on it and reads every store "
                "back")

    def journal(self) -> dict:
        plan = self.plan
        return {"action": "migrate the state to the changed query's schema",
                "query_file": self.job.source_file, "query_function": self.job.function,
                "fill": self.fill, "batch_id_before": plan.batch_id,
                "new_batch_id": plan.new_batch_id, "rows_before": plan.rows_before,
                "rows_after": plan.rows_after,
                "fields": {s.label: [f.line() for f in s.key.sources + s.value.sources]
                           for s in self.schema.changed}}

    def call(self, out: Migrated, journal: dict | None) -> str | None:
        ckpt, checks, plan = self.ckpt, self.checks, self.plan
        moving = checks.provider_after != checks.provider_before
        entry = new_batch.offsets_entry(ckpt, plan.batch_id, rocksdb_class() if moving else None)
        target = self.new if self.new is not None else location.staging_folder(ckpt)
        try:
            written = location.prepare(ckpt, target, checks.inventory, self.schema.fresh_folder,
                                       plan.batch_id, plan.new_batch_id, entry)
            with new_batch.read_location(ckpt, checks.inventory, plan.batch_id,
                                         checks.provider_before, rocksdb_class()) as read:
                ran = run_rewriter(ckpt.spark, read, plan.batch_id, target.root,
                                   plan.new_batch_id, self._transform())
            new_batch.commit_new_batch(ckpt, target, plan.batch_id, plan.new_batch_id)
            out.lines.append(f"Spark's rewriter wrote batch {plan.new_batch_id} from batch "
                             f"{plan.batch_id} into {target.root} ({written} metadata and log "
                             f"files first; the transform ran for {len(ran.stores)} stores), "
                             "committed")
            if self.new is None:
                return self._adopt(target, journal, out)
            return None
        except Exception as exc:  # noqa: BLE001 - Py4J wraps whatever Spark raised
            return first_line(exc)
        finally:
            if self.new is None:
                target.remove_tree()

    def _adopt(self, staging, journal: dict, out: Migrated) -> str | None:
        """In place: the migrated batch joins the checkpoint, after one more look for a live
        writer (the rewrite took time)."""
        ckpt, plan = self.ckpt, self.plan
        signs = live_writer_signs(ckpt, self.checks.inventory)
        if signs:
            return (f"a query wrote to the checkpoint while Spark rewrote its state ({signs[0]}): "
                    "the migrated batch was not moved in")
        moved, replaced = location.adopt(ckpt, staging, self.checks.inventory, plan.batch_id,
                                         plan.new_batch_id, f"{journal['backup_dir']}/replaced")
        journal["adopted"] = {"moved_in": moved, "replaced": replaced}
        self.replaced = replaced
        out.lines.append(f"moved into the checkpoint: {len(moved)} files of batch "
                         f"{plan.new_batch_id}" + (f"; {len(replaced)} metadata and schema files "
                                                   f"it replaces moved to {journal['backup_dir']}"
                                                   "/replaced" if replaced else ""))
        return None

    def _transform(self):
        """``transform(raw, operator_id, store)`` for the state rewriter (see the module)."""
        ckpt, plan, fill = self.ckpt, self.plan, self.fill
        hdfs = self.checks.provider_before == "hdfs"
        by_store: dict[tuple[int, str], list] = {}
        for store in self.schema.stores:
            by_store.setdefault((store.operator_id, store.store_name), []).append(store)

        def transform(raw, operator_id: int, store_name: str):
            families = by_store.get((operator_id, store_name), [])
            n = operator_model(ckpt, operator_id).num_partitions
            parts = []
            for store in families:
                unit = unit_of(ckpt, store)
                if store.changed or hdfs:
                    cut = key_width_cut(ckpt, unit)
                    rows = (mapped_rows(ckpt, store, unit, plan.batch_id, fill, cut)
                            .select("key", "value", PK) if store.changed else
                            unchanged_rows(ckpt, unit, plan.batch_id, cut))
                    parts.append(encode_state_rows(rows, keep=(PK,)).withColumn(
                        "column_family_name", _literal(store.family)))
                else:
                    parts.append(raw_with_key(raw, store.family if len(families) > 1 else None))
            if not parts:
                return raw
            rows = parts[0]
            for part in parts[1:]:
                rows = rows.unionByName(part)
            return as_raw_rows(placed(rows, n), raw.schema)
        return transform

    def verify(self, out: Migrated, inventory: dict) -> tuple[bool, list[str]]:
        ckpt, checks, plan = self.ckpt, self.checks, self.plan
        target = Checkpoint(ckpt.spark, self.new.root) if self.new is not None else ckpt.refresh()
        batch, metadata_json, query_id = restart_settings(target)
        restart = probe(ckpt.spark, target, self.job, batch, metadata_json, query_id)
        out.restart_check = "passes" if restart.error_class is None else restart.error_class
        lines = ["verified: Spark's restart check of the changed query passes on the result"
                 if restart.error_class is None else
                 f"NOT verified: Spark's restart check of the changed query raises "
                 f"{restart.error_class}: {restart.message}"]
        out.stores = self._stores(target)
        lines += [("verified: " if d.equal else "NOT verified: ") + d.line("mapped", "read back")
                  for d in out.stores]
        conf = target.offsets(plan.new_batch_id).conf if plan.new_batch_id in \
            target.offset_batch_ids else {}
        pinned = pinned_kind(conf)
        provider_ok = pinned == checks.provider_after
        lines.append(f"{'verified' if provider_ok else 'NOT verified'}: offsets/"
                     f"{plan.new_batch_id} pins {pinned}")
        changed = changed_files(ckpt, inventory)
        replaced = set(self.replaced)
        unexpected = [rel for rel in changed if rel not in replaced]
        what = ("no file that was there before changed, but the operator metadata and schemas "
                "it replaced" if self.new is None else
                f"the original checkpoint is untouched ({len(inventory)} files, sidecars "
                f"included, as listed before)")
        lines.append(f"verified: {what}" if not unexpected else
                     f"NOT verified: {len(unexpected)} files of the checkpoint changed (e.g. "
                     f"{unexpected[0]})")
        ok = (restart.error_class is None and all(d.equal for d in out.stores) and provider_ok
              and not unexpected)
        return ok, lines

    def _stores(self, target: Checkpoint) -> list[UnitDiff]:
        """Every store of the result read back against the rows the plan expects there."""
        out = []
        for store in self.schema.stores:
            planned = self.plan.store(store.label)
            unit = unit_of(target, store)
            if planned is None or unit is None:
                continue
            found = read_unit(target, unit, self.plan.new_batch_id)
            cols = [c for c in WITH_PARTITION if c in found.columns]
            # In place, the old rows are read with the new schema now: the plan's figures stand
            # for them.
            out.append(diff_frames(target.spark, store.label, None, found, cols,
                                   planned.expected))
        return out


def _literal(value: str):
    from pyspark.sql import functions as F
    return F.lit(value)


def migrate(ckpt: Checkpoint, checks: Checks, schema: SchemaChange, plan: Plan | None,
            fill: dict, job, dry_run: bool = True, backup_dir: str = "",
            quiet_minutes: float = QUIET_MINUTES) -> Migrated:
    """Migrate the checkpoint's state to the changed query's schema (dry run unless asked), after
    the notebook showed ``checks`` and ``plan``."""
    out = Migrated("migrate", dry_run, provider_before=checks.provider_before,
                   provider_after=checks.provider_after, output_path=checks.output_path or None,
                   checks=checks, change=schema, plan=plan, fill=fill, job=job)
    if plan is None:
        out.refused = checks.refusal() or "no plan: the state could not be read"
    elif plan.problems and not checks.refusal():
        out.refused = f"{plan.problems[0]}; nothing was changed"
    new_location = open_fs(ckpt.spark, checks.output_path).raw() if checks.output_path else None
    return apply_change(ckpt, _Migrate(ckpt, checks, schema, plan, fill, job, new_location),
                        checks, out, backup_dir=backup_dir, quiet_minutes=quiet_minutes,
                        new_location=new_location)


def undo(ckpt: Checkpoint, journal_path: str = "", output_path: str = "", dry_run: bool = True,
         force: bool = False, quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """In place: put the checkpoint back as the migration found it, byte for byte (the files it
    wrote, and those of a query restarted since, go aside into the backup folder, never
    deleted). A new location (``output_path``): remove it, after checking it holds this query."""
    return undo_change(ckpt, MIGRATE, journal_path, output_path, dry_run, force, quiet_minutes)
