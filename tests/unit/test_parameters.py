"""Parameters as schedulers pass them (strings), turned into the types the notebooks declare."""
import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.running.parameters import check_declared, coerce, unknown_parameters


@pytest.mark.parametrize("given, expected", [
    ("false", False), ("False", False), ("FALSE", False), (" true ", True), ("True", True),
    (True, True), (False, False),
])
def test_booleans_are_true_or_false_in_any_case(given, expected):
    assert coerce("force", given, bool) is expected


@pytest.mark.parametrize("given", ["maybe", "", "flase", "no", "yes", "0", "1", "off", 0, 1, 2,
                                   0.5, [True]])
def test_anything_else_is_refused_naming_the_parameter(given):
    with pytest.raises(RunbookError, match=r"^force=.* is not true or false: pass -p force true "
                                           r"or -p force false$"):
        coerce("force", given, bool)


def test_numbers_lists_and_text():
    assert coerce("num_partitions", "8", int) == 8 and coerce("num_partitions", 8.0, int) == 8
    assert coerce("quiet_minutes", "0.5", float) == 0.5 and coerce("quiet_minutes", 5, float) == 5.0
    assert coerce("keys", "[a, b]", list) == ["a", "b"] and coerce("keys", [1], list[int]) == [1]
    assert coerce("checkpoint_path", 2024, str) == "2024"
    for name, value, declared, says in [("num_partitions", "eight", int, "is not a number"),
                                        ("num_partitions", "8.5", int, "is not a whole number"),
                                        ("num_partitions", True, int, "is not a number"),
                                        ("quiet_minutes", ".inf", float, "is not a finite number"),
                                        ("keys", "a", list, "is not a list"),
                                        ("checkpoint_path", ["x"], str, "is not text")]:
        with pytest.raises(RunbookError, match=f"^{name}=.* {says}"):
            coerce(name, value, declared)


def test_the_notebook_namespace_gets_the_declared_types():
    namespace = {"__annotations__": {"force": bool, "dry_run": bool, "num_partitions": int,
                                     "mode": str},
                 "force": "false", "dry_run": True, "num_partitions": "4", "mode": "undo"}
    assert check_declared(namespace) == {"force": False, "num_partitions": 4}
    assert namespace["force"] is False and namespace["num_partitions"] == 4


def test_a_parameter_left_unset_stays_unset():
    """``lower_bound_seconds: float = None`` (04): None means "read it from the checkpoint"."""
    assert coerce("lower_bound_seconds", None, float) is None


def test_unknown_parameters_are_named():
    assert unknown_parameters({"forse": "true", "force": "true"}, {"force": bool}) == ["forse"]
