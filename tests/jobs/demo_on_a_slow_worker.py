"""A demo checkpoint written by a session whose first Python worker connects back too late: run
as its own process (the worker settings are fixed when Spark starts). Prints the batches logged
and committed, as JSON."""
import json
import os
import sys

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos.checkpoints import build_demo_checkpoint
from state_runbooks.session.spark_session import get_spark

path, workload = sys.argv[1], sys.argv[2]
spark = get_spark("local[2]", conf={"spark.python.use.daemon": "false",
                                   "spark.python.worker.module": "slow_python_worker",
                                   "spark.executorEnv.PYTHONPATH": os.environ["PYTHONPATH"]})
build_demo_checkpoint(spark, workload, path, batches=2)
ckpt = Checkpoint(spark, path)
print(json.dumps({"offsets": ckpt.offset_batch_ids, "commits": ckpt.commit_batch_ids}))
