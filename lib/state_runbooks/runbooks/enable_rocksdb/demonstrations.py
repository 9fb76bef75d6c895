"""Demonstrations on this Spark of what it does with the provider settings, each on a scratch
checkpoint under :func:`work_folder`:

- a class that does not exist fails only when a stateful query starts (``STREAM_FAILED``, caused
  by ``ClassNotFoundException``), and that failed start has already written ``offsets/0`` with the
  bad class pinned, so the checkpoint stays broken after the conf is fixed
  (:func:`demonstrate_wrong_class`);
- a restart keeps the provider pinned in the offsets log whatever the session says
  (:func:`demonstrate_pinned_provider`);
- the changelog-checkpointing flag is not pinned: on restart the session's value decides what the
  next batch writes (:func:`demonstrate_changelog_flip`).
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import root_cause
from state_runbooks.common.runtime import OSS_ROCKSDB_PROVIDER
from state_runbooks.common.spark_settings import CHANGELOG_CONF, PROVIDER_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos.checkpoints import (
    build_demo_checkpoint,
    new_demo_path,
    run_demo_batches,
)

from .provider import (
    WIDELY_PUBLISHED_WRONG_CLASS,
    WORKLOAD,
    ClassCheck,
    RocksDBPlan,
    _start_error,
    check_provider_class,
)
from .verification import _kinds_by_version

# On a given checkpoint the demonstration queries run only when asked: whoever points the runbook at
# a checkpoint wants its answer (steps 1, 3 and 4), not a lesson that takes a minute.
SKIPPED = "skipped on a given checkpoint: pass demonstrations=True to run it"
SKIPPED_DEMONSTRATIONS = ("demonstrations (steps 2 and 5-8) skipped on a given checkpoint: pass "
                          "demonstrations=True to run them")


def work_folder() -> str:
    """A fresh folder for this runbook's demonstration checkpoints (DBFS on Databricks)."""
    return new_demo_path("enable-rocksdb")


@dataclass
class WrongClassDemo:
    wrong_class: str
    check: ClassCheck
    start_error_class: str | None
    start_root_cause: str | None
    pinned_after_failure: str | None  # provider class in offsets/0 after the failed start
    committed_batches: list[int]
    restart_class: str
    restart_error_class: str | None
    restart_root_cause: str | None


def demonstrate_wrong_class(spark, folder: str, wrong_class: str = WIDELY_PUBLISHED_WRONG_CLASS,
                            correct_class: str = OSS_ROCKSDB_PROVIDER) -> WrongClassDemo:
    """Set a class that does not exist, start a stateful query (it fails), read what the failed
    start pinned, then restart with the correct class (it fails again: the bad class is pinned)."""
    path = f"{folder}/wrong-class"
    first = _start_error(spark, path, {PROVIDER_CONF: wrong_class})
    ckpt = Checkpoint(spark, path, require_state=False)
    pinned = ckpt.offsets(ckpt.offset_batch_ids[0]).conf.get(PROVIDER_CONF) \
        if ckpt.offset_batch_ids else None
    committed = ckpt.commit_batch_ids
    second = _start_error(spark, path, {PROVIDER_CONF: correct_class})
    return WrongClassDemo(
        wrong_class=wrong_class, check=check_provider_class(spark, wrong_class),
        start_error_class=first.error_class if first else None,
        start_root_cause=root_cause(first.spark_error) if first else None,
        pinned_after_failure=pinned, committed_batches=committed, restart_class=correct_class,
        restart_error_class=second.error_class if second else None,
        restart_root_cause=root_cause(second.spark_error) if second else None)


def wrong_class_lines(demo: WrongClassDemo) -> list[str]:
    check = demo.check
    lines = [f"1. Checked before setting: {check.line()}",
             "2. Set anyway and started a stateful query: "
             + (f"failed at start with [{demo.start_error_class}], caused by "
                f"{demo.start_root_cause}"
                if demo.start_error_class else "it started (unexpected on this Spark)"),
             f"3. The failed start already wrote offsets/0, pinning {demo.pinned_after_failure} "
             f"(committed batches: {demo.committed_batches or 'none'})",
             f"4. Restarted the same checkpoint with the correct class {demo.restart_class}: "
             + (f"failed again with [{demo.restart_error_class}], caused by "
                f"{demo.restart_root_cause}"
                if demo.restart_error_class else "it started")]
    return lines


@dataclass
class RestartDemo:
    """A checkpoint restarted with a different session setting, and what the next batch wrote."""
    checkpoint_path: str
    session_conf: dict  # what the restart's session said
    pinned_before: dict  # the relevant confs pinned before the restart
    pinned_after: dict
    kinds_before: dict  # state version -> file kinds
    kinds_after: dict

    @property
    def new_versions(self) -> dict:
        return {v: k for v, k in self.kinds_after.items() if v not in self.kinds_before}


def _pinned(ckpt: Checkpoint, keys) -> dict:
    conf = ckpt.pinned_conf
    return {k: conf.get(k) for k in keys}


def demonstrate_pinned_provider(spark, folder: str, session_class: str) -> RestartDemo:
    """Write a checkpoint with the default (HDFS) provider, restart it with ``session_class`` set on
    the session, and show which files the new batch writes and which provider stays pinned."""
    path = f"{folder}/pinned-provider"
    build_demo_checkpoint(spark, WORKLOAD, path, batches=1, provider="hdfs", rows_per_batch=10,
                          partitions=2)
    ckpt = Checkpoint(spark, path)
    before, kinds_before = _pinned(ckpt, [PROVIDER_CONF]), _kinds_by_version(ckpt)
    conf = {PROVIDER_CONF: session_class}
    run_demo_batches(spark, WORKLOAD, path, 1, "hdfs", rows_per_batch=10, partitions=2,
                     extra_conf=conf)
    ckpt = Checkpoint(spark, path)  # read afresh: the restart wrote new files
    return RestartDemo(path, conf, before, _pinned(ckpt, [PROVIDER_CONF]), kinds_before,
                       _kinds_by_version(ckpt))


def demonstrate_changelog_flip(spark, checkpoint_path: str,
                               rocksdb_plan: RocksDBPlan) -> RestartDemo:
    """Restart a RocksDB checkpoint with the changelog flag flipped; show what the next batch wrote
    and whether the offsets log pinned the flag."""
    ckpt = Checkpoint(spark, checkpoint_path)
    keys = [PROVIDER_CONF, CHANGELOG_CONF]
    before, kinds_before = _pinned(ckpt, keys), _kinds_by_version(ckpt)
    flipped = not rocksdb_plan.changelog_checkpointing
    conf = {**rocksdb_plan.confs, CHANGELOG_CONF: "true" if flipped else "false"}
    run_demo_batches(spark, WORKLOAD, checkpoint_path, 1, rocksdb_plan.provider_setup,
                     rows_per_batch=10, partitions=2, extra_conf=conf)
    ckpt = Checkpoint(spark, checkpoint_path)  # read afresh: the restart wrote new files
    return RestartDemo(checkpoint_path, {CHANGELOG_CONF: conf[CHANGELOG_CONF]}, before,
                       _pinned(ckpt, keys), kinds_before, _kinds_by_version(ckpt))


def restart_lines(demo: RestartDemo) -> list[str]:
    lines = [f"session on restart: {', '.join(f'{k}={v}' for k, v in demo.session_conf.items())}"]
    for key, value in demo.pinned_after.items():
        lines.append(f"offsets log after the restart: {key} = "
                     f"{value if value is not None else '(not pinned)'}")
    for version, kinds in demo.kinds_before.items():
        lines.append(f"state version {version} (before the restart): {', '.join(kinds)}")
    for version, kinds in demo.new_versions.items():
        lines.append(f"state version {version} (written after the restart): {', '.join(kinds)}")
    return lines
