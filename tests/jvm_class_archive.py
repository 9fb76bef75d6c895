"""One class-data archive for the many JVMs a test run starts (the JDK's class-data sharing).

Every notebook kernel, helper process and server of a run starts its own Spark JVM, and each spent
seconds loading the same Spark classes from the jars. A JVM started with ``-XX:SharedArchiveFile``
maps them from an archive instead: Spark's start and first streaming query took 4-6 s less per
JVM on 2 cores (a session start 5.4-7.6 s -> 3.6 s). The archive is written once per virtual
environment, Java and pyspark (by a short demo run that loads what the tests use) and kept in the
environment. A run that finds none records it while its tests start: the JVMs started before it is
written run without it. It changes how the JVM loads classes, never what Spark does; a JVM that
cannot use it (not written yet, another Java, another classpath) runs without it, silently.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

QUIET = "-Xlog:cds=off,cds+dynamic=off"  # an archive a JVM cannot use is not worth a warning line

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


_recording: threading.Thread | None = None


def archive_option() -> str:
    """JVM options that use the archive; where this environment has none yet, it starts being
    recorded in the background (``wait_for_recording`` at the end of the run)."""
    global _recording
    archive = _archive_path()
    if not archive.exists() and _recording is None:
        env = {**os.environ, "SPARK_SUBMIT_OPTS": f"-XX:ArchiveClassesAtExit={_partial(archive)} "
                                                  f"{QUIET}"}
        _recording = threading.Thread(target=_record, args=(archive, env), daemon=True,
                                      name="record-jvm-class-archive")
        _recording.start()
    return f"-XX:SharedArchiveFile={archive} {QUIET}"


def wait_for_recording() -> None:
    """Let a recording still under way finish, so that its JVM leaves a whole archive or none."""
    if _recording is not None:
        _recording.join(timeout=180)


def _archive_path() -> Path:
    import pyspark
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ \
        else "java"
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    key = hashlib.sha256(f"{java}\n{version}\n{pyspark.__file__}".encode()).hexdigest()[:12]
    return Path(sys.prefix) / "share" / "state-runbooks" / f"spark-{pyspark.__version__}-{key}.jsa"


def _partial(archive: Path) -> Path:
    return archive.with_suffix(f".{os.getpid()}.partial")


def _record(archive: Path, env: dict) -> None:
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = _partial(archive)
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
        partial.replace(archive)  # atomic: a JVM starting meanwhile maps all of it or nothing
    partial.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
