"""The outputs nbval compares (``state-runbooks golden``): a notebook re-executed on its demo, the
compared cells' outputs kept in the committed notebook and every other output stripped."""
from __future__ import annotations

import pathlib

from .execution import execute

CHECK_TAG = "nbval-check-output"


def refresh_golden(notebook: pathlib.Path) -> int:
    """Re-execute a notebook on its demo and keep only the outputs nbval compares.

    Cells tagged ``nbval-check-output`` get the new output and an execution count (nbval skips
    cells without one); every other cell is stripped. Returns the number of compared cells.
    """
    import tempfile

    import nbformat

    with tempfile.TemporaryDirectory() as tmp:
        executed = execute(notebook, pathlib.Path(tmp), html=False, write_summary=False)
        ran = nbformat.read(str(executed.notebook), as_version=4)
    source = nbformat.read(str(notebook), as_version=4)
    ran_by_id = {c.get("id"): c for c in ran.cells}
    checked = 0
    for cell in source.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if CHECK_TAG in cell.metadata.get("tags", []):
            checked += 1
            fresh = ran_by_id[cell.get("id")]
            cell.outputs = [o for o in fresh.outputs if o.get("output_type") != "display_data"]
            cell.execution_count = checked
        else:
            cell.outputs, cell.execution_count = [], None
    source.metadata.pop("papermill", None)
    nbformat.write(source, str(notebook))
    return checked
