"""What a trainee reads in the executed demos (the outputs stored in the notebooks, and their
markdown): no wording known to be wrong, and no sentence whose numbers contradict each other or the
cell beside it. The outputs are the ones nbval compares, refreshed by ``state-runbooks golden``."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# Wordings that were wrong or unreadable where they stood; each with what is true instead.
WRONG = {
    r"thing\(s\)": "count what is broken, with its noun",
    r"\(1 state loads": "one load is 'state load'",
    r"not met: the query stopped": "name the unmet requirement as a requirement",
    r"capped per store": "RocksDB's configured memory is a cap only with bounded memory",
    r"\bone sd\b": "say 'one standard deviation'",
    r"8 bytes per field plus": "the UnsafeRow rule has null bits and rounding too",
    r"no sign of unbounded growth": "a growth verdict judges the trend",
    r"nothing in the committed state is broken": "'the committed state loads' says what is known",
    r"expired state is evicted": "the watermark evicts only what an operator expires by event time",
    r"put it at or above": "a bound is read as 'at least ... and below ...'",
}
GROWTH = re.compile(r"([\d,]+) -> ([\d,]+) rows over batches (\d+)-(\d+) \(([+-][\d.]+)%")


def _texts(path: Path) -> list[str]:
    """Each markdown cell's text, and each code cell's printed output."""
    out = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            out.append("".join(cell["source"]))
            continue
        printed = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                printed.append("".join(o["text"]))
            elif "text/plain" in o.get("data", {}):
                printed.append("".join(o["data"]["text/plain"]))
        out.append("".join(printed))
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_wording_known_to_be_wrong(path):
    text = "\n".join(_texts(path))
    found = {pattern: why for pattern, why in WRONG.items() if re.search(pattern, text)}
    assert not found, found


# The notebooks whose demo prints a growth line, and the one whose demo advises a restart as it
# is: a check that finds nothing to check where the line belongs fails (a rewording would
# otherwise pass it silently).
GROWTH_LINES = {"06_monitor_state"}
RESTART_AS_IT_IS = {"05_recover_corrupted_state"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_growth_figures_add_up(path):
    """A growth line's percentage is its own two row counts' change."""
    found = [line for text in _texts(path) for line in GROWTH.findall(text)]
    assert bool(found) == (path.stem in GROWTH_LINES), found
    for start, end, _first, _last, share in found:
        a, b = int(start.replace(",", "")), int(end.replace(",", ""))
        assert abs((b - a) / max(a, 1) * 100 - float(share)) < 0.06, (start, end, share)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_restart_as_it_is_comes_with_no_move(path):
    """A cell that says to restart as it is does not plan files to move aside."""
    said = [text for text in _texts(path) if "restart the query as it is" in text]
    assert bool(said) == (path.stem in RESTART_AS_IT_IS)
    for text in said:
        assert not re.search(r"\d+ files to move aside", text), text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_demo_ends_with_what_it_showed(path):
    """The demo's closing bullets are stored: 3 to 5 lines, each one ``- `` bullet."""
    cells = json.loads(path.read_text())["cells"]
    heading = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                   and "".join(c["source"]).startswith("## What this showed"))
    printed = _texts(path)[heading + 1].strip().splitlines()
    assert 3 <= len(printed) <= 5 and all(line.startswith("- ") for line in printed), printed


def test_growth_verdict_agrees_with_the_rows_per_batch_beside_it():
    """06's growth verdict against its own state table: levelling off or bounded is never said
    of rows that rose by the same amount in every batch of the window, nor growth of rows that
    stopped rising at its end."""
    texts = _texts(next(p for p in NOTEBOOKS if p.stem == "06_monitor_state"))
    table = next(t for t in texts if t.lstrip().startswith("batch_id"))
    header, *rows = [line.split() for line in table.strip().splitlines()]
    batch, total = header.index("batch_id"), header.index("num_rows_total")
    rows_at = {int(r[batch]): int(r[total]) for r in rows}
    verdicts = re.findall(r"\] (state_\w+): .*? rows over batches (\d+)-(\d+)", "\n".join(texts))
    assert verdicts
    for code, first, last in verdicts:
        steps = [rows_at[b + 1] - rows_at[b] for b in range(int(first), int(last))]
        if code in ("state_levelling", "state_bounded"):
            assert not (len(set(steps)) == 1 and steps[0] > 0), (code, steps)
        if code == "state_growing":
            assert steps[-1] > 0, (code, steps)
