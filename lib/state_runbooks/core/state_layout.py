"""The stateful operators of a state folder and each store's schemas, read from the files Spark
writes for them: the operator metadata (``state/<op>/_metadata/metadata``, or the newest
``_metadata/v2/<batch>``) and the schema files. The same reading serves the checkpoint (the old
query) and the folder Spark's planning writes for the changed query
(:mod:`state_runbooks.query.planning`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .state_schemas import ColumnFamilySchema, read_schema_file


@dataclass
class StoreState:
    store_name: str
    num_partitions: int
    families: list[ColumnFamilySchema] | None  # None: no schema file readable from here
    schema_file: str | None = None


@dataclass
class OperatorState:
    operator_id: int
    operator_name: str
    stores: list[StoreState] = field(default_factory=list)
    properties: dict = field(default_factory=dict)

    def family(self, store: str, name: str) -> ColumnFamilySchema | None:
        for s in self.stores:
            if s.store_name == store:
                return next((f for f in s.families or [] if f.name == name), None)
        return None


def _metadata_rel(fs, op: str) -> str | None:
    v2 = f"state/{op}/_metadata/v2"
    if fs.is_dir(v2):
        batches = sorted(int(e.name) for e in fs.list(v2) if e.name.isdigit())
        if batches:
            return f"{v2}/{batches[-1]}"
    rel = f"state/{op}/_metadata/metadata"
    return rel if fs.exists(rel) else None


def _relative(fs, uri: str) -> str | None:
    """A path Spark wrote into metadata (absolute), relative to ``fs``'s root when below it."""
    marker = uri.find("/state/")
    return uri[marker + 1:] if marker >= 0 and fs.exists(uri[marker + 1:]) else None


def state_layout(spark, fs) -> list[OperatorState]:
    """Every operator under ``state/`` of ``fs``'s root with its stores and their schemas."""
    if not fs.is_dir("state"):
        return []
    operators = []
    for entry in sorted((e for e in fs.list("state") if e.is_dir and e.name.isdigit()),
                        key=lambda e: int(e.name)):
        op = entry.name
        rel = _metadata_rel(fs, op)
        meta = {}
        if rel is not None:
            lines = fs.read_text(rel).splitlines()
            meta = json.loads(lines[1]) if len(lines) > 1 else {}
        name = str(meta.get("operatorInfo", {}).get("operatorName", "unknown"))
        try:
            props = json.loads(meta.get("operatorPropertiesJson") or "{}")
        except json.JSONDecodeError:
            props = {}
        state = OperatorState(int(op), name, properties=props if isinstance(props, dict) else {})
        for info in meta.get("stateStoreInfo", []) or [{"storeName": "default"}]:
            store = str(info.get("storeName", "default"))
            paths = [p for p in (_relative(fs, u) for u in info.get("stateSchemaFilePaths") or [])
                     if p]
            if not paths:
                folder = f"state/{op}/0" + ("" if store == "default" else f"/{store}")
                candidate = f"{folder}/_metadata/schema"
                paths = [candidate] if fs.exists(candidate) else []
            families = read_schema_file(spark, fs, paths[-1]) if paths else None
            state.stores.append(StoreState(store, int(info.get("numPartitions", 0)), families,
                                           paths[-1] if paths else None))
        operators.append(state)
    return operators
