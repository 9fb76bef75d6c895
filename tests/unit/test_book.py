"""The course book's pages and index, rendered from small executed notebooks made here (one with a
plot, one stopped by an error, one that left nothing) and their summaries. No Spark needed: the
demos themselves run in tests/notebooks/test_book.py."""
from __future__ import annotations

import base64
import io
import json
import re
from html.parser import HTMLParser

import nbformat
import pytest
import yaml

from state_runbooks.book import pages as book
from state_runbooks.cli import headless
from state_runbooks.cli import main as cli
from state_runbooks.book.course import read_course
from state_runbooks.cli.runbook_files import repo_notebooks_dir


def _png() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 20), (76, 114, 176)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


PLOT = _png()


class _Tables(HTMLParser):
    """The rows of every table: each a list of (cell text, the links in it)."""

    def __init__(self):
        super().__init__()
        self.rows, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ["", []]
        elif tag == "a" and self._cell is not None:
            self._cell[1].append(dict(attrs)["href"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append((" ".join(self._cell[0].split()), self._cell[1]))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data


def _rows(html: str) -> list[list[tuple[str, list[str]]]]:
    parser = _Tables()
    parser.feed(html)
    return [row for row in parser.rows if row and row[0][0] != "#"]  # without the header rows


def _notebook(title: str, *cells) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {title}\n\nIntro."),
                                           *cells])


@pytest.fixture
def course_book(tmp_path):
    """Source notebooks, a course over them (02_beta first), and what their runs left in out/:
    02_beta ran with a plot (ok), 01_alpha stopped with an error, 00_guide left nothing."""
    notebooks, out = tmp_path / "notebooks", tmp_path / "out"
    notebooks.mkdir()
    out.mkdir()
    plot_cell = nbformat.v4.new_code_cell("plot()", outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": PLOT, "text/plain": "<Figure>"}),
        nbformat.v4.new_output("stream", name="stdout", text="status: ok\n")])
    beta = _notebook("Beta: a plot", nbformat.v4.new_markdown_cell(
        "Next: [01 Alpha](01_alpha.ipynb#Step-2), the [glossary](../runbooks/glossary.md)."),
                     plot_cell)
    error_cell = nbformat.v4.new_code_cell("start()", outputs=[nbformat.v4.new_output(
        "error", ename="RunbookError", evalue="checkpoint path does not exist: /nowhere",
        traceback=["RunbookError: checkpoint path does not exist: /nowhere"])])
    alpha = _notebook("Alpha: stops", error_cell)
    guide = _notebook("Guide: the conventions", nbformat.v4.new_code_cell("conventions()"))
    for stem, nb in (("02_beta", beta), ("01_alpha", alpha), ("00_guide", guide)):
        source = nbformat.from_dict(json.loads(json.dumps(nb)))
        for cell in source.cells:
            if cell.cell_type == "code":
                cell.outputs = []
        nbformat.write(source, str(notebooks / f"{stem}.ipynb"))
    nbformat.write(beta, str(out / "02_beta.ipynb"))
    nbformat.write(alpha, str(out / "01_alpha.ipynb"))
    (out / "02_beta.summary.json").write_text(json.dumps(
        {"runbook": "beta", "status": "ok", "spark_version": "4.3.0", "findings": []}))
    (out / "01_alpha.summary.json").write_text(json.dumps(
        {"runbook": "alpha", "status": "error", "spark_version": None, "findings": [],
         "error": {"type": "RunbookError", "message": "checkpoint path does not exist: /nowhere",
                   "step": "rb = start_runbook(...)"}}))
    course_path = tmp_path / "course.yaml"
    course_path.write_text(yaml.safe_dump({
        "path": [{"notebook": "02_beta", "minutes": 30, "prerequisites": ["PySpark | basics"],
                  "teaches": "How <plots> show | state."},
                 {"notebook": "01_alpha", "minutes": 45, "prerequisites": ["02_beta"],
                  "teaches": "What an error looks like."}],
        "for_authors": [{"notebook": "00_guide", "minutes": 15, "prerequisites": ["01_alpha"],
                         "teaches": "The conventions."}]}))
    return read_course(course_path), notebooks, out


def test_the_index_lists_the_path_in_order_then_the_template_with_each_status(course_book):
    course, notebooks, out = course_book
    index = book.render_book(course, out, notebooks, ["00_guide", "01_alpha", "02_beta"],
                             failures={"00_guide": "the run stopped with exit code 1"})
    html = index.read_text()
    rows = _rows(html)
    assert [row[1][1] for row in rows] == [["02_beta.html"], ["01_alpha.html"], ["00_guide.html"]]
    beta, alpha, guide = rows
    assert [cell for cell, _ in beta] == [
        "1", "02_beta: Beta: a plot", "30", "PySpark | basics", "How <plots> show | state.", "ok"]
    assert alpha[3] == ("02_beta", ["02_beta.html"])  # a prerequisite notebook links to its page
    assert alpha[5][0] == ("error: RunbookError: checkpoint path does not exist: /nowhere "
                           "(step: rb = start_runbook(...))")
    assert guide[0][0] == "1" and guide[5][0] == "failed: the run stopped with exit code 1"
    assert "2 notebooks, about 75 minutes" in html
    assert "query on Spark 4.3.0, taken apart" in html  # a run that never started Spark names none
    assert html.index("The learning path") < html.index("For authors: the conventions")
    assert "<img" not in html


def test_a_page_keeps_its_plots_and_says_its_place_and_status(course_book):
    course, notebooks, out = course_book
    book.render_book(course, out, notebooks, ["00_guide", "01_alpha", "02_beta"])
    beta = (out / "02_beta.html").read_text()
    assert re.findall(r"<img [^>]*src=\"data:image/png;base64,([^\"]+)\"", beta) == [PLOT]
    assert "status: ok" in beta  # the run's own last word, as printed
    header = beta[beta.index("Course book"):beta.index("Beta: a plot")]
    assert 'href="index.html"' in header and "lesson 1 of 2" in header
    assert 'next: <a href="01_alpha.html">01_alpha</a>' in header and "previous" not in header
    assert "Demo status: <strong>ok</strong>" in header
    # Links between notebooks of the book go to their pages, with their anchors.
    assert 'href="01_alpha.html#Step-2"' in beta and "01_alpha.ipynb" not in beta
    alpha = (out / "01_alpha.html").read_text()
    assert "lesson 2 of 2" in alpha and 'previous: <a href="02_beta.html">' in alpha
    assert "checkpoint path does not exist: /nowhere" in alpha[:alpha.index("Alpha: stops")]


@pytest.mark.parametrize("left", ["nothing", "a notebook cut short"])
def test_a_demo_that_left_no_notebook_still_gets_a_page_with_why(course_book, left):
    course, notebooks, out = course_book
    if left != "nothing":
        (out / "00_guide.ipynb").write_text('{"cells": [{"cell_type": "mark')
    book.render_book(course, out, notebooks, ["00_guide"],
                     failures={"00_guide": "ModuleNotFoundError: No module named 'x'"})
    guide = (out / "00_guide.html").read_text()
    assert "for authors: the conventions" in guide and "Guide: the conventions" in guide
    assert "failed</strong>: ModuleNotFoundError: No module named 'x'" in guide
    rows = _rows((out / "index.html").read_text())
    assert [row[1][1] for row in rows] == [["00_guide.html"]]  # a book of what was asked for


def test_the_book_refuses_a_folder_of_the_runbooks_own_files_and_an_unknown_name(tmp_path):
    notebooks = repo_notebooks_dir()
    with pytest.raises(SystemExit, match=r"error: --out=.* is inside .*notebooks"):
        cli.main(["book", "--out", str(notebooks / "book")])
    with pytest.raises(SystemExit, match=r"error: notebook 'no_such' matches 0 notebooks"):
        cli.main(["book", "no_such", "--out", str(tmp_path / "book")])


def test_a_course_that_misses_a_notebook_stops_the_book_before_any_demo(tmp_path, monkeypatch):
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "course.yaml").write_text(yaml.safe_dump({"path": [], "for_authors": []}))
    monkeypatch.setattr(book, "playbooks_folder", lambda: runbooks)
    monkeypatch.setattr(headless, "ChildRun", lambda *a, **k: pytest.fail("a demo ran"))
    with pytest.raises(SystemExit, match=r"error: .*course.yaml does not list 00_template, "
                                          r"01_enable_rocksdb"):
        cli.main(["book", "--out", str(tmp_path / "book")])
