"""The Jupyter kernel the runbooks run in: IPython's own, except that shutting down does not wait for
Spark's JVM.

A kernel shutting down sends its child processes SIGTERM and checks whether they are gone after
0.01, 0.04, 0.14, 0.44 and 1.44 s. Spark's JVM stops its context and runs its shutdown hooks first,
which takes longer than 0.44 s, so every run of a notebook ended about 1.4 s after its last cell
(papermill waits for the kernel to exit). The JVM needs no signal: it exits on its own when the
process that started it is gone (pyspark's gateway server exits when its stdin closes), as it does
after a plain ``python`` script. So the kernel leaves it out of the children it signals and waits
for; every other child process is handled as before.

Installed with the kernel configuration (``state-runbooks install-kernel-config``); elsewhere
(Databricks, another Jupyter) the kernel is the usual one and only the shutdown is slower.
"""
from __future__ import annotations

from ipykernel.ipkernel import IPythonKernel


class RunbookKernel(IPythonKernel):
    def _process_children(self):
        jvm = spark_jvm_pid()
        return [child for child in super()._process_children() if child.pid != jvm]


def spark_jvm_pid() -> int | None:
    """The process id of the JVM that pyspark started in this process (None: none started)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    return proc.pid if proc is not None else None
