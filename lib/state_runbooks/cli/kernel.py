"""The Jupyter kernel the runbooks run in: IPython's own, except that shutting down does not wait for
Spark's JVM or the processes under it.

A kernel shutting down sends the processes under it SIGTERM and checks whether they are gone after
0.01, 0.04, 0.14, 0.44 and 1.44 s. Two of them never were the kernel's to wait for:
- Spark's JVM stops its context and runs its shutdown hooks first, which takes longer than 0.44 s,
  so every run of a notebook ended about 1.4 s after its last cell (papermill waits for the kernel
  to exit).
- A process Spark's launcher scripts left under the JVM: ``spark-class`` builds the java command
  in a bash subshell and then becomes the JVM, and when the subshell exits after that, it stays a
  zombie child of the JVM (which reaps only what it started itself). A zombie ignores signals, so
  about every other run ended 2.1 s late, until the client terminated the kernel.
Neither needs a signal: the JVM exits on its own when the process that started it is gone
(pyspark's gateway server exits when its stdin closes), as after a plain ``python`` script, and
what is under it goes with it. So the kernel leaves the JVM and everything under it out of the
children it signals and waits for; every other child process is handled as before.

Installed with the kernel configuration (``state-runbooks install-kernel-config``); elsewhere
(Databricks, another Jupyter) the kernel is the usual one and only the shutdown is slower.
"""
from __future__ import annotations

from ipykernel.ipkernel import IPythonKernel


class RunbookKernel(IPythonKernel):
    def _process_children(self):
        children = super()._process_children()  # none without psutil: nothing is waited for
        jvm = spark_jvm_pid()
        if not children or jvm is None:
            return children
        spark_side = _with_descendants(jvm)
        return [child for child in children if child.pid not in spark_side]


def spark_jvm_pid() -> int | None:
    """The process id of the JVM that pyspark started in this process (None: none started)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    return proc.pid if proc is not None else None


def _with_descendants(pid: int) -> set[int]:
    import psutil  # there: the kernel found children with it

    try:
        return {pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))}
    except psutil.NoSuchProcess:
        return {pid}
