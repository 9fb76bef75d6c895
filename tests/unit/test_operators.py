"""The family of each operator name a checkpoint's metadata can carry."""
from __future__ import annotations

import pytest

from state_runbooks.core import operators


@pytest.mark.parametrize("name,family", [
    ("stateStoreSave", "aggregation"), ("dedupe", "dedup"),
    ("flatMapGroupsWithState", "group_state"),
    ("transformWithStateExec", "transform_with_state"), ("somethingNew", "unknown")])
def test_families_of_operator_names(name, family):
    assert operators.describe(name) == family
