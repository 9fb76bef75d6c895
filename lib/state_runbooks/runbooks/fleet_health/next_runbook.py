"""The runbook a finding sends a person to, with its parameters filled in: the notebook, and the
command that runs it (``state-runbooks run``)."""
from __future__ import annotations

import shlex

RUNBOOKS = {
    "01": "01_enable_rocksdb", "02": "02_estimate_state_size", "03": "03_inspect_state",
    "05": "05_recover_corrupted_state", "06": "06_monitor_state", "07": "07_repartition_state",
}


def open_next(number: str, checkpoint_path: str, why: str, **parameters) -> dict:
    """What to open next for a finding on ``checkpoint_path``: ``runbook``, its ``notebook``, the
    ``parameters`` to give it, the ``command`` that runs it, and ``why``."""
    name = RUNBOOKS[number]
    given = {"checkpoint_path": checkpoint_path, **parameters}
    command = " ".join([f"state-runbooks run {name}"]
                       + [f"-p {k} {shlex.quote(str(v))}" for k, v in given.items()])
    return {"runbook": name, "notebook": f"notebooks/{name}.ipynb", "parameters": given,
            "command": command, "why": why}
