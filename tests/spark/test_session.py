"""Sessions: which master values are accepted, and one-line errors for what cannot work.

The real Connect server and standalone cluster are started once per run (fixtures in conftest.py).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.session.local_servers import free_port
from state_runbooks.session.spark_session import (
    get_spark,
    is_connect,
)


def test_empty_master_reuses_the_active_session(spark):
    assert get_spark("") is spark
    assert not is_connect(spark)


def test_another_classic_master_beside_the_running_one_is_refused(spark):
    with pytest.raises(RunbookError, match="already runs a Spark session on local"):
        get_spark("spark://127.0.0.1:7077")


def _in_fresh_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_a_session_built_here_takes_the_settings_given_on_top_of_its_own():
    result = _in_fresh_python(
        "from state_runbooks.session.spark_session import get_spark\n"
        "s = get_spark('local[1]', conf={'spark.driver.memory': '1200m'})\n"
        "c = s.sparkContext.getConf()\n"
        "print(c.get('spark.driver.memory'), c.get('spark.sql.session.timeZone'), "
        "s.sparkContext.master)\n")
    assert result.stdout.split() == ["1200m", "UTC", "local[1]"], result.stderr


def test_a_connect_url_with_nothing_listening_names_the_url_and_how_to_start_a_server():
    port = free_port()
    result = _in_fresh_python(
        "from state_runbooks.session.spark_session import get_spark\n"
        "from state_runbooks.common.errors import RunbookError\n"
        f"try:\n    get_spark('sc://127.0.0.1:{port}')\n"
        "except RunbookError as e:\n    print(e)\n")
    line = result.stdout.strip()
    assert line.startswith(f"no Spark Connect server answers at 127.0.0.1:{port}"), result.stderr
    assert "make connect-server" in line and "\n" not in line


def test_a_connect_client_missing_its_packages_names_them():
    result = _in_fresh_python(
        "import sys\nsys.modules['grpc'] = None  # as if grpcio were not installed\n"
        "from state_runbooks.session.spark_session import get_spark\n"
        "from state_runbooks.common.errors import RunbookError\n"
        "try:\n    get_spark('sc://127.0.0.1:1')\n"
        "except RunbookError as e:\n    print(e)\n")
    line = result.stdout.strip()
    assert line.startswith("the Spark Connect client needs grpcio, which"), result.stderr
    assert "pip install 'pyspark[connect]'" in line and "\n" not in line


def test_spark_remote_is_used_when_no_session_is_active(connect_server):
    result = subprocess.run(
        [sys.executable, "-c", "from state_runbooks.session.spark_session import get_spark, is_connect\n"
         "s = get_spark('')\nprint(is_connect(s), s.range(3).count())"],
        capture_output=True, text=True, timeout=300,
        env={**__import__("os").environ, "SPARK_REMOTE": connect_server.url})
    assert result.stdout.split() == ["True", "3"], result.stderr[-2000:]


def test_connect_session_is_reused_by_an_empty_master(on_connect):
    with on_connect() as connect_spark:
        assert is_connect(connect_spark)
        # The Connect session is the active one of its kind; an empty master finds it first.
        assert get_spark("") is connect_spark


def test_an_exited_jvm_is_reaped_so_a_kernel_shutting_down_does_not_wait_for_it():
    # ipykernel's shutdown waits while it has child processes, and a zombie counts as one.
    result = _in_fresh_python(
        "import signal, time, psutil\n"
        "from state_runbooks.session.spark_session import get_spark\n"
        "proc = get_spark('local[1]').sparkContext._gateway.proc\n"
        "proc.send_signal(signal.SIGTERM)\n"
        "deadline = time.time() + 60\n"
        "while psutil.Process().children() and time.time() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print([c.status() for c in psutil.Process().children()])\n")
    assert result.stdout.strip() == "[]", result.stderr[-2000:]


@pytest.mark.slow
def test_a_kernel_shutting_down_leaves_spark_s_jvm_to_exit_by_itself():
    """The installed kernel configuration runs RunbookKernel: at shutdown it does not signal or wait
    for Spark's JVM (IPython's kernel waited about 1.4 s for it) or the processes under it (a zombie
    that Spark's launcher scripts leave there held it 2.1 s more), and the JVM still exits, as after
    a plain script, once the kernel is gone."""
    import psutil
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    printed = []
    try:
        client.execute_interactive(
            "from state_runbooks.session.spark_session import get_spark\n"
            "spark = get_spark('local[1]')\n"
            "jvm = spark.sparkContext._gateway.proc.pid\n"
            "under_jvm = spark._jvm.java.lang.ProcessBuilder(['sleep', '60']).start().pid()\n"
            "kernel = get_ipython().kernel\n"
            "waited = [c.pid for c in kernel._process_children()]\n"
            "print(type(kernel).__name__, jvm, jvm in waited or under_jvm in waited)",
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")), timeout=120)
    finally:
        manager.shutdown_kernel(now=False)
    kernel_class, jvm, signalled = "".join(printed).split()
    assert (kernel_class, signalled) == ("RunbookKernel", "False")
    try:
        psutil.Process(int(jvm)).wait(timeout=60)
    except psutil.NoSuchProcess:
        pass  # already gone
