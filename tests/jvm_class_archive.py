"""The JVM options of a test run, and the class-data archive for the many JVMs it starts.

Every notebook kernel, helper process and server of a run starts its own Spark JVM. Each maps
Spark's classes from one archive (:mod:`state_runbooks.dev.class_archive`, which make demo uses
too): Spark's start and first streaming query took 4-6 s less per JVM on 2 cores (a session start
5.4-7.6 s -> 3.6 s). A run records it with its own JVM options, the quick JIT's (65 s instead of
72 s), when the environment has none.
"""
from __future__ import annotations

from state_runbooks.dev.class_archive import archive_option as _archive_option

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


def archive_option(run_options: str) -> str:
    """JVM options that use the archive, recording it first (with ``run_options``) if this
    environment has none; "" when it cannot be recorded (the run then goes on as before)."""
    return _archive_option(run_options)


if __name__ == "__main__":
    # `make test` and `make demo` record the archive here as soon as Spark is installed, beside
    # the rest of the installation and the bytecode compilation (each leaves part of the two cores
    # idle), before pytest or the runbooks start.
    archive_option(RUN_OPTIONS)
