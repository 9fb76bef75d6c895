"""Errors that are not Spark's pass through unchanged."""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import spark_errors


def test_python_errors_pass_through():
    with pytest.raises(KeyError):
        with spark_errors("anything"):
            raise KeyError("not Spark's")
