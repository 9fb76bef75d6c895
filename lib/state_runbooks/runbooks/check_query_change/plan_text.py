"""What the changed query's plan says, read from Spark's ``explain`` text (the same on a classic
session and over Spark Connect): its sources, its watermarks and its stateful operators in the
order Spark numbers them (the operator nearest the sink is operator 0).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from state_runbooks.core.spark_internals import explain_extended
from state_runbooks.session.spark_session import is_connect

# Physical node -> the operator name Spark writes in the operator metadata.
PHYSICAL_OPERATORS = {
    "StateStoreSave": "stateStoreSave",
    "StreamingDeduplicateWithinWatermark": "dedupeWithinWatermark",
    "StreamingDeduplicate": "dedupe",
    "StreamingSymmetricHashJoin": "symmetricHashJoin",
    "SessionWindowStateStoreSave": "sessionWindowStateStoreSaveExec",
    "FlatMapGroupsInPandasWithState": "applyInPandasWithState",
    "FlatMapGroupsWithState": "flatMapGroupsWithState",
    "TransformWithStateInPySpark": "transformWithStateInPySparkExec",
    "TransformWithStateInPandas": "transformWithStateInPandasExec",
    "TransformWithState": "transformWithStateExec",
    "StreamingGlobalLimit": "globalLimit",
}
_NODE = re.compile(r"^[\s:+\-|*()\d!]*(" + "|".join(sorted(PHYSICAL_OPERATORS, key=len, reverse=True))
                   + r")\b")
_SOURCE = re.compile(r"StreamingRelation(?:V2)?\s+([^,\s\[]+)")
_WATERMARK = re.compile(r"EventTimeWatermark (?:[0-9a-f-]{36}, )?([^#\s]+)#\d+: \w+, (.+?)\s*$")


@dataclass
class PlanFacts:
    sources: list[str] = field(default_factory=list)  # each streaming source's format
    watermarks: list[tuple[str, str]] = field(default_factory=list)  # (column, delay)
    operators: list[str] = field(default_factory=list)  # operator names, operator 0 first


def explain_text(df) -> str:
    """The extended explain (parsed, analyzed, optimized and physical plans) as text."""
    if is_connect(df.sparkSession):
        return df._explain_string(extended=True)
    return explain_extended(df)


def _section(text: str, title: str) -> str:
    start = text.find(f"== {title} ==")
    if start < 0:
        return ""
    end = text.find("\n== ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def plan_facts(text: str) -> PlanFacts:
    analyzed = _section(text, "Analyzed Logical Plan") or text
    physical = _section(text, "Physical Plan")
    # The physical plan names a source by its format; the analyzed one by its class.
    facts = PlanFacts(sources=_SOURCE.findall(physical) or _SOURCE.findall(analyzed))
    for line in analyzed.splitlines():
        match = _WATERMARK.search(line)
        if match and (match.group(1), match.group(2)) not in facts.watermarks:
            facts.watermarks.append((match.group(1), match.group(2)))
    for line in physical.splitlines():
        match = _NODE.match(line)
        if match:
            facts.operators.append(PHYSICAL_OPERATORS[match.group(1)])
    return facts
