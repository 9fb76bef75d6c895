"""The course reads true and the same everywhere: the statements a trainee once found contradicting
their own output or each other stay corrected (the committed notebooks hold their demos' outputs),
every glossary term is linked where a notebook first uses it, every glossary link lands on an
entry, and every notebook ends with an exercise that checks a prediction."""
from __future__ import annotations

import pathlib
import re

import pytest
from notebook_text import cells, outputs, prose

REPO = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PLAYBOOKS = sorted((REPO / "runbooks").glob("*.md"))
GLOSSARY = (REPO / "runbooks" / "glossary.md").read_text()
ENTRIES = re.findall(r'^### <a id="([^"]+)"></a>(.+)$', GLOSSARY, re.M)


def everything() -> str:
    return "\n".join([*(prose(p) + outputs(p) for p in NOTEBOOKS),
                      *(p.read_text() for p in PLAYBOOKS), (REPO / "README.md").read_text()])


# Each statement that contradicted the facts, a run's output or another page, in the words it used.
CORRECTED = {
    "06's demo runs 20 batches, not 12": r"for 12 batches",
    "late rows are not all counted in numRowsDroppedByWatermark": r"counted only in numRowsDrop",
    "the move to RocksDB is the runbook's (09), not a Spark 4.2 feature": r"Spark 4\.2's state "
                                                                            r"rewriter, which moves",
    "a pinned provider changes with 09, not only with a new checkpoint": r"whole life",
    "Spark's reader reads join state format 3 by its four store names": r"format 3: Spark's "
                                                                        r"state reader cannot",
    "Spark's reader has blind spots a restart does not": r"exactly as a restarted query would",
    "operator metadata is written from Spark 4.0 on": r"before Spark 3\.5",
    "02's demo: 5.9x the row bytes measured, 6.5x in its napkin": r"4 to 6 times the row bytes",
    "02's demo: memoryUsedBytes 1.3 times the heap after a restart": r"1\.25 times the heap",
    "the open-source class is not a Databricks setting": r"--- Databricks cluster Spark config\n"
                                                       r"spark\.sql\.streaming\.stateStore\."
                                                       r"providerClass org\.apache",
    "one glossary entry per word: a store is a state store": r"\[store\]\([^)]*#store-instance\)",
    "03's bullets and checklist judge growth by one rule": r"stopped growing",
    "changelog checkpointing is a session setting, not pinned in the offsets log":
        r"pinned in the offsets log: RocksDB with changelog",
    "the late-row filter uses the batch before's watermark, eviction the batch's own":
        r"drop input rows behind it as late",
    "10's windows that differ are those no event reached after the migration":
        r"saw events before the migration",
    "operator ids count from the sink's side, as 03's demo shows": r"in plan order\)",
    "04's late payment is dated 30 s before its order, as 06 says": r"payment is 30 s late",
    "04's counts cover the state history, not one batch": r"Join keys per category at batch",
    "04: a waiting row stays while the watermark is at most its bound, a later one evicts it":
        r"arrives before the watermark \(batch",
}


@pytest.mark.parametrize("fact", CORRECTED)
def test_a_corrected_statement_does_not_come_back(fact):
    assert not re.search(CORRECTED[fact], everything()), fact


def test_the_glossarys_operator_ids_are_those_03s_demo_prints():
    """The sink's side first: the windowed count that writes to the sink is 0."""
    text = outputs(REPO / "notebooks" / "03_inspect_state.ipynb")
    assert "operator 0: stateStoreSave (aggregation)" in text
    assert "operator 1: dedupe (dedup)" in text
    assert "the windowed count is 0 and the deduplication feeding it is 1" in GLOSSARY


def test_03s_closing_bullets_say_what_its_checklist_says():
    text = outputs(REPO / "notebooks" / "03_inspect_state.ipynb")
    checklist = re.search(r"\[\w+\] State growth: (.*)", text).group(1)
    bullets = text[text.index("- the checkpoint keeps"):]
    assert ("only grew" in checklist) == ("only grew" in bullets)


def test_03s_checklist_says_level_of_the_stores_its_growth_table_shows_level():
    """A store whose rows held their value over the table's last samples is not said to only
    grow (the watermark evicts as many rows as each batch adds): the table and the checklist
    printed by the same run agree."""
    from state_runbooks.core.growth import level_from
    text = outputs(REPO / "notebooks" / "03_inspect_state.ipynb")
    header, *rows = re.search(r"^ +(\d+/\S+(?: +\d+/\S+)*)\nbatch_id *\n((?:\d+(?: +\d+)+\n)+)",
                              text, re.M).groups()
    stores = header.split()
    table = [[int(x) for x in line.split()] for line in rows[0].splitlines()]
    checklist = re.search(r"\[\w+\] State growth: (.*)", text).group(1)
    for column, store in enumerate(stores, 1):
        level = level_from([r[column] for r in table], [r[0] for r in table])
        if level is not None:
            assert f"{store} rose" in checklist and f"from batch {level}" in checklist
            assert f"{store} only grew" not in checklist


def test_11s_closing_bullets_place_the_first_window_where_sparks_state_holds_it():
    """The window starts before the first event because Spark aligns windows to the epoch: the
    bounds the closing bullets give are those of the key Spark's reader read at batch 0."""
    text = outputs(REPO / "notebooks" / "11_trace_key.ipynb")
    start, end = re.search(r"batch 0: \{window: \{start: ([\d: -]+), end: ([\d: -]+)\}, "
                           r"user_id: user-0\}", text).groups()
    assert f"user-0's first window is [{start} UTC, {end} UTC)" in text
    assert "at whole multiples of 3 s since the epoch" in text


def test_06s_batches_and_late_rows_are_those_of_its_run():
    path = REPO / "notebooks" / "06_monitor_state.ipynb"
    from state_runbooks.demos.event_logs import DEMO_BATCHES
    assert f"{DEMO_BATCHES} batches" in outputs(path)
    table = outputs(path)
    batch_1 = re.search(r"^\s+1\s+\d+\s+0 symmetricHashJoin\s+\d+\s+(\d+)\s+\d+\s+(\d+)$", table,
                        re.M)
    assert batch_1 and int(batch_1.group(2)) == 0  # batch 1's late payments: not counted


@pytest.mark.parametrize(("playbook", "figure"), [
    ("state-too-large.md", "5.9x"), ("state-too-large.md", "6.5x"),
    ("state-too-large.md", "4.62 MiB"), ("state-too-large.md", "3.51 MiB"),
    ("capacity-planning.md", "4.62 MiB"), ("capacity-planning.md", "3.51 MiB")])
def test_a_playbooks_figure_is_the_one_02_prints(playbook, figure):
    assert figure in (REPO / "runbooks" / playbook).read_text()
    assert figure in outputs(REPO / "notebooks" / "02_estimate_state_size.ipynb")


def test_every_glossary_link_lands_on_an_entry():
    anchors = {a for a, _ in ENTRIES}
    links = re.findall(r"glossary\.md#([\w-]+)", everything())
    links += re.findall(r"\]\(#([\w-]+)\)", GLOSSARY)
    assert sorted(set(links) - anchors - {"learning-path"}) == []


def _term(title: str):
    return re.compile(r"(?<![\w./#-])(" + re.escape(title.replace("`", "")) + r"(?:s|es)?)"
                      r"(?![\w-])", re.I)


def _plain_spans(text: str) -> list[tuple[int, int]]:
    """Code, links, headings and bold: where a term is not a use to link."""
    spans = []
    for pattern in (r"`[^`\n]*`", r"\[[^\]]*\]\([^)\n]*\)", r"^#.*$", r"\*\*[^*\n]*\*\*"):
        spans += [m.span() for m in re.finditer(pattern, text, re.M)]
    return spans


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_glossary_term_is_linked_where_the_notebook_first_uses_it(notebook):
    unlinked = []
    for anchor, title in ENTRIES:
        link = f"glossary.md#{anchor})"
        for cell in cells(notebook):
            if cell["cell_type"] != "markdown":
                continue
            text = "".join(cell["source"])
            protected = _plain_spans(text)
            use = next((m for m in _term(title).finditer(text)
                        if not any(a <= m.start() < b for a, b in protected)
                        and not (anchor == "unit" and text[m.end():m.end() + 5] == " test")),
                       None)
            linked = text.find(link)
            if linked == -1 and use is None:
                continue
            if linked == -1 or (use is not None and use.start() < linked):
                unlinked.append(f"{title}: {text[max(0, use.start() - 30):use.end() + 10]!r}")
            break
    assert unlinked == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_ends_with_an_exercise_that_checks_a_prediction(notebook):
    found = {c.get("id"): c for c in cells(notebook)}
    # One text for every exercise, the template's: it says what any of them may change.
    template = {c.get("id"): c for c in cells(REPO / "notebooks" / "00_template.ipynb")}
    assert found["try-it-md"]["source"] == template["try-it-md"]["source"]
    assert "".join(found["try-it-md"]["source"]).startswith("## Try it yourself")
    source = "".join(found["try-it"]["source"])
    assert ".try_it(" in source and "exercise.check(my_prediction)" in source
    # A prediction passed to the run (-p my_prediction ...) reaches the check: the parameters
    # cell declares it, and the exercise cell does not set it again.
    (parameters,) = [c for c in cells(notebook) if "parameters" in c["metadata"].get("tags", [])]
    assert 'my_prediction: str = ""' in "".join(parameters["source"])
    assert not re.search(r"^my_prediction\s*=", source, re.M)
    assert "nbval-check-output" in found["try-it"]["metadata"].get("tags", [])
