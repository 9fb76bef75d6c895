"""One class-data archive for the many Spark JVMs that ``make demo`` and ``make test`` start (the
JDK's class-data sharing).

Each JVM spent seconds loading the same Spark classes from the jars; a JVM started with
``-XX:SharedArchiveFile`` maps them from the archive instead. The archive is recorded once per
environment, Java and pyspark (a short demo run that loads what the runbooks use: about a minute),
and kept in the environment (``make demo`` and ``make test`` record it beside the rest of their
setup). It changes how the JVM loads classes, never what Spark does; a JVM that cannot use it
(another Java, another classpath) runs without it, silently. A session a runbook starts on its own
(Jupyter, papermill, ``state-runbooks run``) does not use it.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

SUBMIT_OPTIONS_ENV = "SPARK_SUBMIT_OPTS"  # JVM options Spark's launcher gives the driver JVM
QUIET = "-Xlog:cds=off,cds+dynamic=off"  # an archive a JVM cannot use is not worth a warning line
# The library from its source: make records the archive while the package itself installs.
_LIBRARY = Path(__file__).resolve().parents[2]

# Run with the archive being recorded: the classes of a session, streaming queries on both state
# store providers, the state readers, and a Python stateful operator (Arrow).
_RECORDING = """
import os, sys, tempfile
from state_runbooks.core.spark_internals import jvm_pid
from state_runbooks.demos.checkpoints import build_demo_checkpoint
from state_runbooks.session.spark_session import get_spark
spark = get_spark()
root = tempfile.mkdtemp()
for workload, provider in (("two_operators", "rocksdb_changelog"), ("join", "hdfs"),
                           ("pandas_with_state", "hdfs")):
    run = build_demo_checkpoint(spark, workload, os.path.join(root, workload), 2, provider, 10, 2)
    reader = spark.read.format("statestore")
    if workload == "join":
        reader = reader.option("joinSide", "left")
    reader.load(run.checkpoint_path).count()
    spark.read.format("state-metadata").load(run.checkpoint_path).collect()
print(jvm_pid(spark))
"""


def archive_option(run_options: str = "", record: bool = True) -> str:
    """JVM options that use the archive, recording it first if this environment has none and
    ``record`` (with ``run_options``, the JVM options of the runs that use it); "" when there is
    none (the runs then go on as before)."""
    archive = archive_path()
    if record and not archive.exists():
        _record(archive, run_options)
    return f"-XX:SharedArchiveFile={archive} {QUIET}" if archive.exists() else ""


def demo_environment() -> dict[str, str]:
    """What ``state-runbooks demo`` adds to its runbooks' environment: the archive for their JVMs,
    where this environment has one (recorded by make) and the JVM options were not given."""
    if SUBMIT_OPTIONS_ENV in os.environ:
        return {}
    option = archive_option(record=False)
    return {SUBMIT_OPTIONS_ENV: option} if option else {}


def archive_path() -> Path:
    """Where this environment keeps the archive: one per Java and pyspark, as a JVM can only use
    an archive of its own Java and classpath."""
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ \
        else "java"
    try:
        version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    except OSError:
        version = ""
    spec = find_spec("pyspark")  # found, not imported: a command line spares the import
    location = spec.origin if spec else ""
    key = hashlib.sha256(f"{java}\n{version}\n{location}".encode()).hexdigest()[:12]
    return Path(sys.prefix) / "share" / "state-runbooks" / f"spark-{_pyspark_version()}-{key}.jsa"


def _pyspark_version() -> str:
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "unknown"


def _record(archive: Path, run_options: str) -> None:
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only environment: no archive, the runs go on without
        return
    partial = archive.with_suffix(f".{os.getpid()}.partial")
    path = os.pathsep.join(filter(None, [str(_LIBRARY), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path,
           SUBMIT_OPTIONS_ENV: f"{run_options} -XX:ArchiveClassesAtExit={partial} {QUIET}"}
    done = subprocess.run([sys.executable, "-c", _RECORDING], capture_output=True, text=True,
                          env=env, timeout=600)
    if done.returncode != 0:
        return
    # The JVM writes the archive as it exits, after the Python process that started it.
    jvm = int(done.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while _alive(jvm) and time.monotonic() < deadline:
        time.sleep(0.2)
    if partial.exists() and not _alive(jvm):
        partial.replace(archive)
    partial.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
