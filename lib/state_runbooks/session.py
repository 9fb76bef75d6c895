"""The Spark session every runbook uses: the active one if there is one, else a quiet local one."""
from __future__ import annotations

from importlib import resources

from .environment import JavaMissing, check_java
from .errors import RunbookError

DEFAULT_MASTER = "local[2]"

# Settings for sessions this library builds. A session that already exists (Databricks, a notebook
# that made its own) is used as it is.
LOCAL_CONF = {
    "spark.ui.enabled": "false",  # parallel test runs and scheduled runs do not need a UI port
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",  # timestamps print the same on every machine
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "2g",
}


def _log4j_config() -> str:
    return str(resources.files("state_runbooks") / "resources" / "log4j2.properties")


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM on this side: no ``sparkContext``)."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # the Connect client's packages are not installed: not a Connect session
        return False
    return isinstance(spark, ConnectSession)


def get_spark(spark_master: str = "", app_name: str = "state-runbooks"):
    """Return the active SparkSession, or build one on ``spark_master`` (default ``local[2]``).

    A session built here logs errors only, shows no progress bar and prints timestamps in UTC.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    try:
        check_java()
    except JavaMissing as exc:
        raise RunbookError(str(exc)) from None
    builder = SparkSession.builder.master(spark_master or DEFAULT_MASTER).appName(app_name)
    for key, value in LOCAL_CONF.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.driver.extraJavaOptions",
                             f"-Dlog4j2.configurationFile=file:{_log4j_config()}")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class session_conf:
    """Set SQL confs for a block and restore the previous values after it (unset stays unset)."""

    def __init__(self, spark, conf: dict[str, str]):
        self.spark, self.conf, self._saved = spark, conf, {}

    def __enter__(self):
        for key, value in self.conf.items():
            self._saved[key] = self.spark.conf.get(key, None)
            self.spark.conf.set(key, value)
        return self

    def __exit__(self, *exc):
        for key, value in self._saved.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)
        return False
