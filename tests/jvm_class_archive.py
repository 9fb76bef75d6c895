"""The JVM options of a test run, and one class-data archive for the many JVMs it starts (the JDK's
class-data sharing).

Every notebook kernel, helper process and server of a run starts its own Spark JVM, and each spent
seconds loading the same Spark classes from the jars. A JVM started with ``-XX:SharedArchiveFile``
maps them from an archive instead: Spark's start and first streaming query took 4-6 s less per
JVM on 2 cores (a session start 5.4-7.6 s -> 3.6 s). The archive is written once per virtual
environment, Java and pyspark, and kept in the environment: a short demo run that loads what the
tests use records it in about a minute (with the run's own JVM options, the quick JIT's: 65 s
instead of 72 s). It changes how the JVM loads classes, never what Spark does; a JVM that cannot
use it (another Java, another classpath) runs without it, silently.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

# Every JVM a run starts runs Spark on small data, two test workers to two cores: the quick JIT
# alone and the serial collector spend less of the cores on themselves (a papermill run of 03's
# demo: 20-21 s instead of 25 s; 03's demo on the cluster: 49-55 s instead of 59-66 s). The JVMs
# that live as long as the run (each worker's own session, the Connect server) take it too: alone,
# the optimizing compiler paid for itself within two minutes, but beside the other worker it takes
# its share of the same two cores. The files that run first gain most (04's and 02's test files:
# 269-276 s instead of 343-389 s), the whole of make test a little (1,224 s of tests instead of
# 1,252 s). Every JVM maps Spark's classes from one archive (below). None of this changes
# anything Spark decides. conftest.py sets them in the run's first process (its workers inherit
# them), unless the run was given its own.
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1"
SERIAL_GC = "-XX:+UseSerialGC"
RUN_OPTIONS = f"{QUICK_JIT} {SERIAL_GC}"
QUIET = "-Xlog:cds=off,cds+dynamic=off"  # an archive a JVM cannot use is not worth a warning line
_LIBRARY = Path(__file__).resolve().parents[1] / "lib"

# Run with the archive being recorded: the classes of a session, streaming queries on both state
# store providers, the state readers, and a Python stateful operator (Arrow).
_RECORDING = """
import os, sys, tempfile
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
print(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
"""


def archive_option(run_options: str) -> str:
    """JVM options that use the archive, recording it first if this environment has none (with
    ``run_options``, the run's own JVM options); "" when it cannot be recorded (the run then goes
    on as before)."""
    archive = _archive_path()
    if not archive.exists():
        _record(archive, run_options)
    return f"-XX:SharedArchiveFile={archive} {QUIET}" if archive.exists() else ""


def _archive_path() -> Path:
    import pyspark
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ \
        else "java"
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    key = hashlib.sha256(f"{java}\n{version}\n{pyspark.__file__}".encode()).hexdigest()[:12]
    return Path(sys.prefix) / "share" / "state-runbooks" / f"spark-{pyspark.__version__}-{key}.jsa"


def _record(archive: Path, run_options: str) -> None:
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(f".{os.getpid()}.partial")
    # The library from its source: make test records the archive while the rest installs.
    path = os.pathsep.join(filter(None, [str(_LIBRARY), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path,
           "SPARK_SUBMIT_OPTS": f"{run_options} -XX:ArchiveClassesAtExit={partial} {QUIET}"}
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


if __name__ == "__main__":
    # `make test` records the archive here as soon as Spark is installed, beside the rest of the
    # installation and the bytecode compilation (each leaves part of the two cores idle), before
    # pytest starts.
    archive_option(RUN_OPTIONS)
