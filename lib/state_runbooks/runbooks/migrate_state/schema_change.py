"""What the changed query does to the checkpoint's state, store by store, and what Spark says.

The old side is read from the checkpoint's operator metadata and schema files; the new side from
the files Spark's own planning writes for the changed query on an empty local folder
(:func:`state_runbooks.query.planning.plan_fresh`): the schemas a restart would compare, and the
files a migration gives the checkpoint so that Spark's check accepts the changed query. Spark's
verdict on the unchanged checkpoint comes from its restart check
(:func:`state_runbooks.query.planning.probe`).
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass, field

from state_runbooks.common.errors import first_line
from state_runbooks.core.state_layout import OperatorState, state_layout
from state_runbooks.core.state_schemas import difference, show
from state_runbooks.query.planning import Probe, plan_fresh, probe, restart_settings

from .mapping import Mapping, field_paths, map_part, unknown_fills


@dataclass
class StoreChange:
    """One store (or one column family of a transformWithState store), old and new."""
    operator_id: int
    operator_name: str
    store_name: str
    family: str  # "default", or the column family (a state variable, its timers)
    key_before: dict
    value_before: dict
    key_after: dict
    value_after: dict
    key: Mapping
    value: Mapping

    @property
    def label(self) -> str:
        name = self.store_name if self.family == "default" else self.family
        return f"{self.operator_id}/{name}"

    @property
    def changed(self) -> bool:
        return self.key.changed or self.value.changed

    @property
    def problems(self) -> list[str]:
        return self.key.problems + self.value.problems

    def schema_lines(self) -> list[str]:
        if not self.changed:
            return [f"{self.label}: key and value unchanged"]
        out = []
        for part, before, after in (("key", self.key_before, self.key_after),
                                    ("value", self.value_before, self.value_after)):
            what = difference(after, before)
            out.append(f"{self.label} {part}: {show(before)}  ->  {show(after)}"
                       + ("" if what == "same" else f" ({what})"))
        return out


@dataclass
class SchemaChange:
    """Every store, Spark's verdict on the unchanged checkpoint, and what refuses a migration."""
    batch_id: int  # the newest offsets entry: its settings are the ones a restart applies
    stores: list[StoreChange] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    spark_check: Probe | None = None
    fresh_folder: str | None = None  # Spark's planning of the changed query (local, temporary)
    new_operators: list[OperatorState] = field(default_factory=list)

    @property
    def changed(self) -> list[StoreChange]:
        return [s for s in self.stores if s.changed]

    @property
    def spark_refuses(self) -> str | None:
        """The error class Spark's restart check raises on the unchanged checkpoint."""
        return self.spark_check.error_class if self.spark_check else None

    def all_problems(self) -> list[str]:
        return self.problems + [p for s in self.stores for p in s.problems]

    def remove_fresh(self) -> None:
        if self.fresh_folder:
            shutil.rmtree(self.fresh_folder, ignore_errors=True)
            self.fresh_folder = None


def _struct(schema: dict | None):
    from pyspark.sql import types as T
    return T.StructType.fromJson(schema) if schema else None


def compare_schemas(spark, ckpt, job, fill: dict[str, str]) -> SchemaChange:
    """Old and new schemas of every store, the mapping of every changed field, Spark's verdict;
    the caller removes ``fresh_folder`` when done (:meth:`SchemaChange.remove_fresh`)."""
    batch, metadata_json, query_id = restart_settings(ckpt)
    out = SchemaChange(batch, spark_check=probe(spark, ckpt, job, batch, metadata_json, query_id))
    if not out.spark_check.available:  # no planning here: nothing is known of the new side
        return out
    folder = tempfile.mkdtemp(prefix="state-runbooks-migrate-")
    atexit.register(shutil.rmtree, folder, True)  # at the latest when the kernel exits
    try:
        out.new_operators = plan_fresh(spark, job, folder, metadata_json, query_id)
    except Exception as exc:  # noqa: BLE001 - Spark's planning refused the changed query
        shutil.rmtree(folder, ignore_errors=True)
        out.problems.append(f"Spark cannot plan the changed query as a new query: "
                            f"{first_line(exc)}")
        return out
    out.fresh_folder = folder
    old = {o.operator_id: o for o in state_layout(spark, ckpt.fs)}
    new = {o.operator_id: o for o in out.new_operators}
    out.problems += _operator_problems(old, new)
    fields = set()
    for op_id in sorted(set(old) & set(new)):
        for store in new[op_id].stores:
            for family in store.families or []:
                before = old[op_id].family(store.store_name, family.name)
                key_after, value_after = _struct(family.key), _struct(family.value)
                fields |= field_paths("key", key_after) | field_paths("value", value_after)
                if before is None:
                    out.problems.append(f"operator {op_id} store {store.store_name} "
                                        f"{family.name}: new in the changed query (its state "
                                        "would start empty): not migrated")
                    continue
                out.stores.append(StoreChange(
                    op_id, new[op_id].operator_name, store.store_name, family.name,
                    before.key, before.value, family.key, family.value,
                    map_part("key", _struct(before.key), key_after, fill),
                    map_part("value", _struct(before.value), value_after, fill)))
    out.problems += [f"fill names {name}, not a field of the changed query's state (its fields: "
                     f"{', '.join(sorted(fields)[:8])}{', ...' if len(fields) > 8 else ''})"
                     for name in unknown_fills(fill, fields)]
    return out


def _operator_problems(old: dict, new: dict) -> list[str]:
    out = []
    for op_id in sorted(set(old) | set(new)):
        a, b = old.get(op_id), new.get(op_id)
        if a is None:
            out.append(f"operator {op_id} ({b.operator_name}) is added by the changed query: its "
                       "state would start empty, and Spark refuses a restart whose operators "
                       "differ from the checkpoint's; start a new checkpoint instead")
        elif b is None:
            out.append(f"operator {op_id} ({a.operator_name}) is removed by the changed query: "
                       "its state would be dropped, and Spark refuses a restart whose operators "
                       "differ from the checkpoint's; start a new checkpoint instead")
        elif a.operator_name != b.operator_name:
            out.append(f"operator {op_id} is {a.operator_name} in the checkpoint and "
                       f"{b.operator_name} in the changed query: not the same state; start a "
                       "new checkpoint instead")
        elif [s.store_name for s in a.stores] != [s.store_name for s in b.stores]:
            out.append(f"operator {op_id} ({a.operator_name}) keeps the stores "
                       f"{[s.store_name for s in a.stores]} in the checkpoint and "
                       f"{[s.store_name for s in b.stores]} in the changed query (another state "
                       "format): not migrated")
        elif [s.num_partitions for s in a.stores] != [s.num_partitions for s in b.stores]:
            out.append(f"operator {op_id} ({a.operator_name}): the changed query plans "
                       f"{b.stores[0].num_partitions} partitions against the checkpoint's "
                       f"{a.stores[0].num_partitions}: repartition with 07 first")
    return out
