"""A Python worker that starts too slowly once, as on a machine at load 15: set as
``spark.python.worker.module`` (with the daemon off, so Spark starts each worker on its own and
waits its fixed 10 s for it to connect back). The first worker sleeps past that wait; every
later one is pyspark's own worker."""
import os
import runpy
import time

FLAG = os.environ["SLOW_WORKER_FLAG"]

if not os.path.exists(FLAG):
    open(FLAG, "w").close()
    time.sleep(13)
runpy.run_module("pyspark.worker", run_name="__main__")
