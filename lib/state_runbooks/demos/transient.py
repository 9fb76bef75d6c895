"""One more start for a demo batch that a busy machine failed: Spark's Python worker not connecting
back in time.

Spark 4.3 waits a fixed 10 s for a Python worker it starts on its own to connect back
(``PythonWorkerFactory.createSimpleWorker``: no setting changes it; through the daemon it waits 60 s).
transformWithStateInPandas and Python data sources start such workers; on two cores at load 15 the
interpreter and its imports alone can take longer. A demo batch that fails so is run once more, on
the checkpoint as it was before it: the failed start's offsets entry (its batch planned, never
committed) is set aside first, so the demo keeps its batch numbering and its known answers. It says
so on the process's stderr (the run's log), never in a cell or a verdict. Any other failure, and a
second one, is raised as it came. Only demo checkpoints, which the demo itself wrote and nothing
else runs on, are treated this way; a user's checkpoint never is.
"""
from __future__ import annotations

import sys

TRANSIENT_WORKER_ERRORS = (
    "Python worker failed to connect back",
    "Timed out while waiting for the Python worker to connect back",
    "Lost connection to Python daemon",
)


def is_transient_worker_error(error: BaseException) -> bool:
    """A failure whose text (Spark's, causes included) says a Python worker did not connect in
    time: the machine's load, not the query."""
    seen, texts = set(), []
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        texts.append(str(error))
        error = getattr(error, "spark_error", None) or error.__cause__ or error.__context__
    return any(marker in text for text in texts for marker in TRANSIENT_WORKER_ERRORS)


def set_aside_uncommitted_batch(spark, root: str) -> list[str]:
    """Move what a failed start wrote after the last commit of a demo checkpoint (its offsets
    entries, and the state versions its batch wrote; on batch 0, the whole state folder, which
    Spark wants empty then) into ``<root>.failed-start/``; the paths moved. Nothing when this
    client cannot move files (Spark Connect)."""
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.core.fs import open_fs
    from state_runbooks.core.state_files import state_layout
    fs = open_fs(spark, root)
    if not fs.can_modify or not fs.exists("offsets"):
        return []
    ckpt = Checkpoint(spark, root, require_state=False)
    committed = max(ckpt.commit_batch_ids, default=-1)
    moved = [f"offsets/{b}" for b in ckpt.offset_batch_ids if b > committed]
    if not moved:
        return []
    if fs.exists("state"):
        files = state_layout(fs.walk("state")).files
        moved += (["state"] if committed < 0 else
                  sorted(f.path for f in files if f.version > committed + 1))
    aside = open_fs(spark, root.rstrip("/") + ".failed-start")
    for rel in moved:
        fs.move_to(rel, aside, rel)
    return moved


def run_once_more_if_transient(spark, root: str, what: str, start_batch) -> object:
    """``start_batch()`` (one availableNow start, to its end); once more on a transient worker
    failure, from the checkpoint as it was before it."""
    try:
        return start_batch()
    except Exception as error:  # noqa: BLE001 - anything not transient is raised as it came
        if not is_transient_worker_error(error):
            raise
        moved = set_aside_uncommitted_batch(spark, root)
        print(f"state-runbooks: {what}: a Python worker did not connect back in time (a busy "
              f"machine); running the batch once more (set aside, uncommitted: "
              f"{', '.join(moved) or 'none'})", file=sys.__stderr__, flush=True)
        return start_batch()
