"""The text of a committed notebook, as the course tests read it: its cells, its prose (the
markdown cells) and what its demo printed (the code cells' text outputs)."""
from __future__ import annotations

import json
import pathlib


def cells(path: pathlib.Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def prose(path: pathlib.Path) -> str:
    return "\n".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown")


def outputs(path: pathlib.Path) -> str:
    return "\n".join("".join(o.get("text", "")) for c in cells(path) if c["cell_type"] == "code"
                     for o in c.get("outputs", []))
