"""The Spark session every runbook uses: classic (local, standalone, YARN, Kubernetes) or Spark Connect.

``spark_master`` says where to run:

- ``""``: the session that is already active (a Databricks notebook, a Jupyter kernel that made one),
  of either kind; else ``$SPARK_REMOTE`` when set (Spark's own variable for Connect); else ``local[2]``.
- ``sc://host:port[/;param=value...]``: Spark Connect (Databricks serverless and standard access
  mode give nothing else). The client talks gRPC to a server; there is no JVM on this side.
- ``local``, ``local[N]``, ``local[*]``, ``spark://host:port``, ``yarn``, ``k8s://https://...``:
  a classic session with a JVM driver here.
"""
from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading
from importlib import resources
from urllib.parse import urlsplit

from state_runbooks.common.environment import JavaMissing, check_java
from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import (
    CONSOLE_PROGRESS_CONF,
    DRIVER_JAVA_OPTIONS_CONF,
    DRIVER_MEMORY_CONF,
    SESSION_TIME_ZONE_CONF,
    SHUFFLE_PARTITIONS_CONF,
    UI_ENABLED_CONF,
)

DEFAULT_MASTER = "local[2]"
CONNECT_SCHEME = "sc://"
CONNECT_DEFAULT_PORT = 15002
CONNECT_MODULES = {"grpc": "grpcio", "grpc_status": "grpcio-status",
                   "google.rpc": "googleapis-common-protos", "zstandard": "zstandard"}
CONNECT_PACKAGES = ", ".join(CONNECT_MODULES.values())
_CLASSIC_MASTER = re.compile(r"^(local(\[(\d+|\*)(,\d+)?\])?|spark://\S+|yarn|k8s://\S+)$")
# How long a Connect URL may take to accept a TCP connection. The client itself retries for about
# ten minutes before it gives up on a server that is not there.
CONNECT_PROBE_SECONDS = 5.0

# Settings for sessions this library builds. A session that already exists (Databricks, a notebook
# that made its own) is used as it is.
LOCAL_CONF = {
    UI_ENABLED_CONF: "false",  # parallel test runs and scheduled runs do not need a UI port
    CONSOLE_PROGRESS_CONF: "false",
    SESSION_TIME_ZONE_CONF: "UTC",  # timestamps print the same on every machine
    SHUFFLE_PARTITIONS_CONF: "4",
    DRIVER_MEMORY_CONF: "2g",
}


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM on this side: no ``sparkContext``)."""
    if "pyspark.sql.connect.session" not in sys.modules:  # no such session can exist yet: the
        return False  # answer without importing the Connect client (seconds)
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # the Connect client's packages are not installed: not a Connect session
        return False
    return isinstance(spark, ConnectSession)


def session_kind(spark) -> str:
    """``connect`` or ``classic``: what the runbooks tell a user they ran on."""
    return "connect" if is_connect(spark) else "classic"


def check_master(spark_master: str) -> str:
    """The master URL, stripped; a value Spark would not understand gets a one-line error."""
    master = (spark_master or "").strip()
    if master.startswith(CONNECT_SCHEME) or not master or _CLASSIC_MASTER.match(master):
        return master
    raise RunbookError(f"spark_master={spark_master!r} is not a Spark master: use sc://host:port "
                       "(Spark Connect), local[N], spark://host:port, yarn or k8s://..., or leave it "
                       "empty for the active session")


def active_session():
    """The session already active in this process, Connect or classic, else None. Where both
    exist, the kind pyspark's functions build columns for (Connect once a remote session was
    made through pyspark's builder, as on Databricks serverless) comes first."""
    from pyspark.sql import SparkSession
    from pyspark.sql.utils import is_remote
    sessions = [_active_connect_session(), SparkSession.getActiveSession()]
    if not is_remote():
        sessions.reverse()
    return next((s for s in sessions if s is not None), None)


def _active_connect_session():
    # Only a process that imported pyspark's Connect client can hold a Connect session: a classic
    # one is spared importing it (gRPC, protobuf, Arrow).
    client = sys.modules.get("pyspark.sql.connect.session")
    return client.SparkSession.getActiveSession() if client is not None else None


def get_spark(spark_master: str = "", app_name: str = "state-runbooks", conf: dict | None = None):
    """Return the session for ``spark_master`` (see the module's doc for the accepted values).

    A classic session built here logs errors only, shows no progress bar and prints timestamps in
    UTC; ``conf`` adds to or overrides its settings (``LOCAL_CONF``). An active session of the
    requested kind is reused as it is.
    """
    master = check_master(spark_master)
    if not master:
        active = active_session()
        if active is not None:
            return active
        master = os.environ.get("SPARK_REMOTE", "").strip() or DEFAULT_MASTER
    if master.startswith(CONNECT_SCHEME):
        return _connect_session(master)
    return _classic_session(master, app_name, {**LOCAL_CONF, **(conf or {})})


def _classic_session(master: str, app_name: str, conf: dict):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if running != master:
            raise RunbookError(f"this process already runs a Spark session on {running}, so a "
                               f"session on {master} cannot start here: leave spark_master empty "
                               "to use it, or restart the kernel")
        return active
    try:
        check_java()
    except JavaMissing as exc:
        raise RunbookError(str(exc)) from None
    # Python workers (applyInPandasWithState, transformWithState) run PYSPARK_PYTHON, else "python3"
    # from PATH, which need not have pyarrow and pandas: use this interpreter unless told otherwise.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    builder = builder.config(DRIVER_JAVA_OPTIONS_CONF,
                             f"-Dlog4j2.configurationFile=file:{_log4j_config()}")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _reap_jvm_when_it_exits(spark)
    return spark


def _reap_jvm_when_it_exits(spark) -> None:
    """Collect the JVM's exit status as soon as it exits. Nothing else does, so an exited JVM stays
    a zombie child of this process, and a Jupyter kernel shutting down waits for its children,
    zombies included: every notebook run ended 2.5 s late, until the client sent SIGTERM."""
    proc = getattr(spark.sparkContext._gateway, "proc", None)  # None: a JVM this process did not start
    if proc is not None and not getattr(proc, "_state_runbooks_reaper", False):
        proc._state_runbooks_reaper = True
        threading.Thread(target=proc.wait, name="reap-spark-jvm", daemon=True).start()


def _log4j_config() -> str:
    return str(resources.files("state_runbooks") / "resources" / "log4j2.properties")


def connect_address(url: str) -> tuple[str, int]:
    """Host and port of an ``sc://host:port/;params`` URL (port 15002 when not given)."""
    parts = urlsplit(url.split("/;", 1)[0])
    if not parts.hostname:
        raise RunbookError(f"spark_master={url!r} names no host: use sc://host:port, e.g. "
                           f"sc://localhost:{CONNECT_DEFAULT_PORT}")
    return parts.hostname, parts.port or CONNECT_DEFAULT_PORT


def missing_connect_packages() -> list[str]:
    """The Spark Connect client's packages that cannot be imported here."""
    import importlib
    missing = []
    for module, package in CONNECT_MODULES.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    return missing


def _connect_session(url: str):
    missing = missing_connect_packages()
    if missing:
        raise RunbookError(f"the Spark Connect client needs {', '.join(missing)}, which cannot be "
                           f"imported: pip install 'pyspark[connect]' (it brings {CONNECT_PACKAGES})")
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    active = ConnectSession.getActiveSession()
    if active is not None and _same_server(active, url):
        return active
    host, port = connect_address(url)
    try:
        socket.create_connection((host, port), timeout=CONNECT_PROBE_SECONDS).close()
    except OSError as exc:
        raise RunbookError(f"no Spark Connect server answers at {host}:{port} ({url}): "
                           f"{exc.strerror or exc}; start one (make connect-server, or "
                           "$SPARK_HOME/sbin/start-connect-server.sh) or fix the URL") from None
    from pyspark.sql import SparkSession
    if SparkSession.getActiveSession() is not None:
        raise RunbookError(f"this process already runs a classic Spark session, so a Spark Connect "
                           f"session ({url}) cannot start beside it: restart the kernel")
    # Through pyspark's own builder, which also switches pyspark.sql.functions to Connect columns
    # for this process, as in any notebook that calls builder.remote().
    return SparkSession.builder.remote(url).getOrCreate()


def _same_server(spark, url: str) -> bool:
    host, port = connect_address(url)
    try:
        return spark.client._builder.endpoint == f"{host}:{port}"  # noqa: SLF001
    except Exception:  # noqa: BLE001 - a client without these attributes: build a new session
        return False


class session_conf:
    """Set SQL confs for a block and restore the previous values after it (unset stays unset)."""

    def __init__(self, spark, conf: dict[str, str]):
        self.spark, self.conf, self._saved = spark, conf, {}

    def __enter__(self):
        for key, value in self.conf.items():
            self._saved[key] = conf_value(self.spark, key)
            self.spark.conf.set(key, value)
        return self

    def __exit__(self, *exc):
        for key, value in self._saved.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)
        return False


def conf_value(spark, key: str) -> str | None:
    """A SQL conf's value, None when unset (Spark Connect raises for unset keys instead)."""
    try:
        return spark.conf.get(key, None)
    except Exception as exc:  # noqa: BLE001 - Connect: [SQL_CONF_NOT_FOUND]
        if "SQL_CONF_NOT_FOUND" in str(exc):
            return None
        raise


def progress_dict(progress) -> dict:
    """A progress as plain JSON values: PySpark returns ``StreamingQueryProgress`` objects (ids as
    UUIDs) on classic sessions and dicts elsewhere."""
    return json.loads(progress.json) if hasattr(progress, "json") else dict(progress)
