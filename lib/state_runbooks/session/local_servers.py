"""Local Spark servers started from the installed pyspark: a Spark Connect server and a standalone
cluster (one master, one worker). For trying the runbooks as they run elsewhere, and for the tests.

    state-runbooks connect-server [--port 15002]     # until Ctrl-C
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from importlib import resources

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import (
    CONNECT_ADDRESS_CONF,
    CONNECT_PORT_CONF,
    DRIVER_JAVA_OPTIONS_CONF,
)
from state_runbooks.session.spark_session import LOCAL_CONF

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
READY_SECONDS = 120  # a cold JVM on a busy two-core machine takes 10-40 s
STOP_SECONDS = 30


def spark_home() -> str:
    """pyspark's package folder: it carries bin/, jars/ and sbin/ like a Spark distribution."""
    import pyspark
    return os.path.dirname(pyspark.__file__)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, what: str, log: str,
                   ending: threading.Event | None = None) -> None:
    """Wait until ``process`` listens on ``port``; stop it if it never does, or if the wait ends
    otherwise (Ctrl-C, SIGTERM, ``ending`` set): it runs in a session of its own and would outlive
    this one."""
    try:
        _poll_port(port, process, what, log, ending)
    except BaseException:
        stop_server(process.pid)
        raise


def _poll_port(port: int, process: subprocess.Popen, what: str, log: str,
               ending: threading.Event | None) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if ending is not None and ending.is_set():
            raise KeyboardInterrupt
        if process.poll() is not None:
            raise RunbookError(f"{what} exited with code {process.returncode}: see {log}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise RunbookError(f"{what} did not listen on 127.0.0.1:{port} within {READY_SECONDS} s: "
                       f"see {log}")


def _conf_args(conf: dict[str, str]) -> list[str]:
    return [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]


def _start(args: list[str], log: str) -> subprocess.Popen:
    # Python workers of the server (pandas and transformWithState UDFs) use this interpreter.
    env = dict(os.environ, SPARK_HOME=spark_home())
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.pop("SPARK_REMOTE", None)  # the server itself is a classic application
    with open(log, "ab") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def stop_server(pid: int) -> None:
    """Stop a server started here and every process of its session (while it starts, Spark's
    launcher scripts run a shell and a JVM beside it; once up, its Python workers): SIGTERM, then
    SIGKILL after ``STOP_SECONDS``. Any process may stop it, not only the one that started it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)  # started as a session leader: its group has its id
        deadline = time.monotonic() + STOP_SECONDS
        while not _gone(pid):
            if time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.2)


def _gone(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid  # this process's child: collect its status
    except ChildProcessError:  # another process's: gone once no process has its id
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


@dataclass
class ConnectServer:
    """A Spark Connect server on 127.0.0.1 (master ``local[2]``, the library's local settings)."""
    port: int
    process: subprocess.Popen
    log: str

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_server(self.process.pid)


def start_connect_server(log: str, port: int = 0, master: str = "local[2]",
                         ending: threading.Event | None = None) -> ConnectServer:
    """Start a Spark Connect server and wait until it accepts connections. Set ``ending`` (from a
    signal handler) to stop it while it starts: unlike an exception raised by the handler, it
    cannot arrive between the server's start and this function knowing its process."""
    port = port or free_port()
    log4j = resources.files("state_runbooks") / "resources" / "log4j2.properties"
    conf = {**LOCAL_CONF, CONNECT_ADDRESS_CONF: "127.0.0.1",
            CONNECT_PORT_CONF: str(port),
            DRIVER_JAVA_OPTIONS_CONF: f"-Dlog4j2.configurationFile=file:{log4j}"}
    args = [os.path.join(spark_home(), "bin", "spark-submit"), "--master", master,
            "--class", CONNECT_SERVER_CLASS, *_conf_args(conf), "spark-internal"]
    process = _start(args, log)
    _wait_for_port(port, process, "the Spark Connect server", log, ending)
    return ConnectServer(port, process, log)


@dataclass
class StandaloneCluster:
    """A standalone Spark cluster on 127.0.0.1: one master, one worker."""
    master_port: int
    master: subprocess.Popen
    worker: subprocess.Popen
    log: str

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def stop(self) -> None:
        stop_server(self.worker.pid)
        stop_server(self.master.pid)


def start_standalone_cluster(log: str, cores: int = 2, memory: str = "2g") -> StandaloneCluster:
    """Start a master and one worker and wait until the master listens."""
    spark_class = os.path.join(spark_home(), "bin", "spark-class")
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    master = _start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(port), "--webui-port", str(ui_port)], log)
    _wait_for_port(port, master, "the standalone master", log)
    worker = _start([spark_class, "org.apache.spark.deploy.worker.Worker",
                     f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", str(cores),
                     "--memory", memory, "--webui-port", str(worker_ui)], log)
    return StandaloneCluster(port, master, worker, log)
