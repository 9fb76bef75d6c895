"""Which master values a runbook accepts, and the one-line refusal of the others."""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.session.spark_session import (
    check_master,
    connect_address,
)


@pytest.mark.parametrize("master", ["", "local", "local[2]", "local[*]", "local[2,3]",
                                    "spark://10.0.0.1:7077", "yarn", "k8s://https://k8s:443",
                                    "sc://localhost:15002", "sc://h:443/;token=x;use_ssl=true"])
def test_accepted_masters(master):
    assert check_master(f"  {master} ") == master


@pytest.mark.parametrize("master", ["localhost", "local[two]", "mesos://h:5050", "sc//h:1"])
def test_a_master_spark_would_not_understand_is_refused_in_one_line(master):
    with pytest.raises(RunbookError, match="is not a Spark master: use sc://host:port") as err:
        check_master(master)
    assert "\n" not in str(err.value)


def test_connect_address_defaults_to_port_15002_and_ignores_parameters():
    assert connect_address("sc://example.com/;token=abc") == ("example.com", 15002)
    assert connect_address("sc://127.0.0.1:15102") == ("127.0.0.1", 15102)
    with pytest.raises(RunbookError, match="names no host"):
        connect_address("sc://:15002")
