"""The common start and end of every runbook notebook.

``start_runbook`` turns the common parameters (``checkpoint_path``, ``spark_master``,
``summary_path``, ``fail_on``) into a session, a validated checkpoint (the runbook's demo when no
path is given) and an empty summary; ``RunbookContext.finish`` records and writes the summary and
fails the run when its status reaches ``fail_on``.
"""
from __future__ import annotations

from dataclasses import dataclass

from .checkpoint import Checkpoint
from .demo import DemoRun, build_demo_checkpoint
from .results import Summary, check_fail_on, finish
from .session import get_spark


@dataclass
class RunbookContext:
    name: str
    spark: object
    checkpoint: Checkpoint
    demo: DemoRun | None
    summary: Summary
    summary_path: str
    fail_on: str

    @property
    def is_demo(self) -> bool:
        return self.demo is not None

    def describe(self) -> str:
        """One line saying what this run works on."""
        ckpt = self.checkpoint
        origin = (f"demo checkpoint ({self.demo.workload}, {self.demo.batches} batches, "
                  f"{self.demo.provider})" if self.demo else "checkpoint")
        return (f"{self.name} on {origin} {ckpt.root}: query {ckpt.query_id}, "
                f"last committed batch {ckpt.last_committed_batch_id}, "
                f"provider {ckpt.provider_kind}, Spark {self.spark.version}")

    def finish(self) -> dict:
        return finish(self.summary, self.summary_path, self.fail_on, self.spark)


def start_runbook(name: str, checkpoint_path: str = "", spark_master: str = "",
                  summary_path: str = "", fail_on: str = "never", demo: dict | None = None,
                  require_state: bool = True) -> RunbookContext:
    """Validate the common parameters, get Spark, open the checkpoint (or build the demo)."""
    check_fail_on(fail_on)
    spark = get_spark(spark_master)
    demo_run = None
    if not checkpoint_path:
        demo_run = build_demo_checkpoint(spark, **(demo or {}))
        checkpoint_path = demo_run.checkpoint_path
    ckpt = Checkpoint(spark, checkpoint_path, require_state=require_state)
    summary = Summary(runbook=name, checkpoint_path=ckpt.root, spark_version=spark.version)
    return RunbookContext(name, spark, ckpt, demo_run, summary, summary_path, fail_on)
