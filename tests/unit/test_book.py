"""The course book's pages and index, rendered from small executed notebooks made here (one with a
plot, one stopped by an error, one that left nothing), a few playbooks, and their summaries. No Spark needed: the
demos themselves run in tests/notebooks/test_book.py."""
from __future__ import annotations

import base64
import io
import json
import pathlib
import re
from html import unescape
from html.parser import HTMLParser

import nbformat
import pytest
import yaml

from state_runbooks.book import build as book
from state_runbooks.cli import headless
from state_runbooks.cli import main as cli
from state_runbooks.book.course import read_course
from state_runbooks.cli.runbook_files import repo_notebooks_dir
from state_runbooks.common.errors import RunbookError


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


class _Links(HTMLParser):
    """Every link of a page (its href) and every anchor it holds (its ids)."""

    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def _page(path: pathlib.Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _shown(html: str) -> str:
    """A page's text without its tags (code is highlighted span by span)."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def raw_links(book_dir: pathlib.Path) -> list[str]:
    """Markdown link syntax a page shows as text (outside code): a link Markdown did not render."""
    shown = []
    for page in book_dir.rglob("*.html"):
        prose = re.sub(r"<(pre|code)\b.*?</\1>", "", page.read_text(encoding="utf-8"), flags=re.S)
        shown += [f"{page.name}: {m}" for m in re.findall(r"\[[^\]]*\]\([^)]*\)", _shown(prose))]
    return shown


def dead_links(book_dir: pathlib.Path) -> list[str]:
    """Every local link of every page of a book that goes to no file, or to no anchor in it."""
    pages = {p: _page(p) for p in book_dir.rglob("*.html")}
    dead = []
    for page, parsed in pages.items():
        for href in parsed.links:
            if re.match(r"[a-z]+:", href):
                continue
            path, _, anchor = href.partition("#")
            target = (page.parent / path).resolve() if path else page
            if not target.exists():
                dead.append(f"{page.relative_to(book_dir)}: {href} (no such file)")
            elif anchor and target.suffix == ".html" and anchor not in pages[target].ids:
                dead.append(f"{page.relative_to(book_dir)}: {href} (no such anchor)")
    return dead


@pytest.fixture
def course_book(tmp_path):
    """Source notebooks and playbooks, a course over them (02_beta first), and what their runs left
    in out/: 02_beta ran with a plot (ok), 01_alpha stopped with an error (its log kept),
    00_guide left nothing."""
    notebooks, playbooks, out = tmp_path / "notebooks", tmp_path / "runbooks", tmp_path / "out"
    for folder in (notebooks, playbooks / "schedules", out / "logs"):
        folder.mkdir(parents=True)
    plot_cell = nbformat.v4.new_code_cell("plot()", outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": PLOT, "text/plain": "<Figure>"}),
        nbformat.v4.new_output("stream", name="stdout", text="status: ok\n")])
    beta = _notebook("Beta: a plot", nbformat.v4.new_markdown_cell(
        "Next: [01 Alpha](01_alpha.ipynb#Step-2), a [state\nstore](../runbooks/glossary.md#state-"
        "store), the [path](../runbooks/README.md#learning-path), a "
        "[schedule](../runbooks/schedules/beta.yaml)."), plot_cell)
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
    beta.metadata["papermill"] = {"duration": 83.4}  # what papermill records of a run
    nbformat.write(beta, str(out / "02_beta.ipynb"))
    nbformat.write(alpha, str(out / "01_alpha.ipynb"))
    (out / "logs" / "01_alpha.log").write_text("Traceback: the rest of the story\n")
    (out / "02_beta.summary.json").write_text(json.dumps(
        {"runbook": "beta", "status": "ok", "spark_version": "4.3.0", "findings": []}))
    (out / "01_alpha.summary.json").write_text(json.dumps(
        {"runbook": "alpha", "status": "error", "spark_version": None, "findings": [],
         "error": {"type": "RunbookError", "message": "checkpoint path does not exist: /nowhere",
                   "step": "rb = start_runbook(...)"}}))
    (playbooks / "README.md").write_text(
        "# The playbooks\n\n## Learning path\n\nStart with [beta](../notebooks/02_beta.ipynb), "
        "then [alpha](../notebooks/01_alpha.ipynb#Step-2); words in the [glossary](glossary.md)."
        "\n\n```bash\n# a comment, not a heading; [not](a-link.md)\n```\n")
    (playbooks / "glossary.md").write_text(
        "# Glossary\n\n### <a id=\"state-store\"></a>state store\nSee the [path](README.md#"
        "learning-path) and [a store](#state-store).\n")
    (playbooks / "schedules" / "beta.yaml").write_text("checkpoint_path: /data/beta  # yours\n")
    course_path = playbooks / "course.yaml"
    course_path.write_text(yaml.safe_dump({
        "path": [{"notebook": "02_beta", "minutes": 30, "prerequisites": ["PySpark | basics"],
                  "teaches": "How <plots> show | state."},
                 {"notebook": "01_alpha", "minutes": 45, "prerequisites": ["02_beta"],
                  "teaches": "What an error looks like."}],
        "for_authors": [{"notebook": "00_guide", "minutes": 15, "prerequisites": ["01_alpha"],
                         "teaches": "The conventions."}]}))
    return read_course(course_path), notebooks, playbooks, out


ALL = ["00_guide", "01_alpha", "02_beta"]


def test_the_index_lists_the_path_in_order_then_the_template_then_the_playbooks(course_book):
    course, notebooks, playbooks, out = course_book
    index = book.render_book(course, out, notebooks, playbooks, ALL,
                             failures={"00_guide": "the run stopped with exit code 1"})
    html = index.read_text()
    rows = _rows(html)
    assert [row[1][1] for row in rows] == [["02_beta.html"], [], []]  # only a page built links
    beta, alpha, guide = rows
    assert [cell for cell, _ in beta] == [
        "1", "02_beta: Beta: a plot", "30", "1 min 23 s", "PySpark | basics",
        "How <plots> show | state.", "ok"]
    assert alpha[3][0] == "-"  # a demo that stopped has no run time
    assert alpha[4] == ("02_beta", ["02_beta.html"])  # a prerequisite notebook links to its page
    assert alpha[6] == ("not built: error: RunbookError: checkpoint path does not exist: /nowhere "
                        "(step: rb = start_runbook(...)), see logs/01_alpha.log",
                        ["logs/01_alpha.log"])
    assert guide[0][0] == "1" and guide[6] == (
        "not built: failed: the run stopped with exit code 1, see logs/00_guide.log", [])
    assert ("2 notebooks, about 75 minutes of study, and 1 min 23 s of demos run when this book "
            "was made") in html
    assert "query on Spark 4.3.0, taken apart" in html  # a run that never started Spark names none
    order = [html.index(x) for x in ("The learning path", "For authors: the conventions",
                                     "The playbooks and the glossary")]
    assert order == sorted(order)
    assert 'href="runbooks/glossary.html">Glossary</a>' in html
    assert "<img" not in html


def test_a_page_keeps_its_plots_and_says_its_place_and_status_above_and_below(course_book):
    course, notebooks, playbooks, out = course_book
    book.render_book(course, out, notebooks, playbooks, ALL)
    beta = (out / "02_beta.html").read_text()
    assert re.findall(r"<img [^>]*src=\"data:image/png;base64,([^\"]+)\"", beta) == [PLOT]
    assert "status: ok" in beta  # the run's own last word, as printed
    header = beta[beta.index("Course book"):beta.index("Beta: a plot")]
    assert 'href="index.html"' in header and "lesson 1 of 1" in header  # alpha has no page
    assert "next" not in header and "previous" not in header
    assert "Demo status: <strong>ok</strong>" in header
    assert "About 30 minutes to study, and its demo ran in 1 min 23 s when this book was made." \
        in header
    footer = beta[beta.index("status: ok"):]
    assert 'href="index.html"' in footer and "lesson 1 of 1" in footer
    # Links go to the book's pages with their anchors; a lesson without a page keeps its text.
    assert 'href="runbooks/glossary.html#state-store"' in beta
    assert 'href="runbooks/README.html#learning-path"' in beta
    assert 'href="runbooks/schedules/beta.html"' in beta
    assert "Next: 01 Alpha, a" in beta and ".ipynb" not in beta and ".md" not in beta


@pytest.mark.parametrize("left", ["an error", "nothing", "a notebook cut short"])
def test_a_demo_that_failed_gets_no_page_and_an_earlier_page_goes(course_book, left):
    course, notebooks, playbooks, out = course_book
    stem = "01_alpha" if left == "an error" else "00_guide"
    (out / f"{stem}.html").write_text("an earlier run's page")
    if left == "a notebook cut short":
        (out / "00_guide.ipynb").write_text('{"cells": [{"cell_type": "mark')
    book.render_book(course, out, notebooks, playbooks, [stem],
                     failures={"00_guide": "ModuleNotFoundError: No module named 'x'"})
    assert not (out / f"{stem}.html").exists()
    rows = _rows((out / "index.html").read_text())
    assert len(rows) == 1 and rows[0][6][0].startswith("not built: ")


def test_a_book_of_a_demo_with_a_summary_but_no_notebook_says_so(course_book):
    course, notebooks, playbooks, out = course_book
    (out / "02_beta.ipynb").unlink()
    book.render_book(course, out, notebooks, playbooks, ["02_beta"])
    assert not (out / "02_beta.html").exists()
    assert _rows((out / "index.html").read_text())[0][6][0] == (
        "not built: failed: the demo left no executed notebook, see logs/02_beta.log")


def test_the_playbooks_glossary_and_schedules_are_pages_with_their_links_and_anchors(course_book):
    course, notebooks, playbooks, out = course_book
    book.render_book(course, out, notebooks, playbooks, ALL)
    guide = (out / "runbooks" / "README.html").read_text()
    assert 'href="../02_beta.html"' in guide and "then alpha;" in guide  # alpha has no page
    assert 'href="glossary.html"' in guide and 'id="learning-path"' in guide
    assert "# a comment, not a heading; [not](a-link.md)" in _shown(guide)  # code as it is
    glossary = (out / "runbooks" / "glossary.html").read_text()
    assert 'href="README.html#learning-path"' in glossary and 'href="#state-store"' in glossary
    assert 'href="../index.html"' in glossary
    schedule = (out / "runbooks" / "schedules" / "beta.html").read_text()
    assert "checkpoint_path: /data/beta  # yours" in _shown(schedule)
    assert 'href="../../index.html"' in schedule and 'href="../glossary.html"' in schedule
    assert dead_links(out) == []


def test_a_book_of_the_real_notebooks_and_playbooks_has_no_dead_link(tmp_path):
    """Every lesson built (each notebook as its own run's output), every playbook: each link of
    every page lands on a page and, where it names one, on an anchor of it, and no page shows a
    link's Markdown as text."""
    notebooks = repo_notebooks_dir()
    course = read_course(notebooks.parent / "runbooks" / "course.yaml")
    stems = [lesson.notebook for lesson in course.lessons]
    for stem in stems:
        (tmp_path / f"{stem}.ipynb").write_bytes((notebooks / f"{stem}.ipynb").read_bytes())
        (tmp_path / f"{stem}.summary.json").write_text('{"status": "ok"}')
    book.render_book(course, tmp_path, notebooks, notebooks.parent / "runbooks", stems)
    assert dead_links(tmp_path) == []
    assert raw_links(tmp_path) == []


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


def test_a_notebook_studied_in_parts_gets_a_page_per_part_with_its_steps(tmp_path):
    notebooks, playbooks, out = tmp_path / "notebooks", tmp_path / "runbooks", tmp_path / "out"
    for folder in (notebooks, playbooks, out):
        folder.mkdir()

    def step(heading, printed):
        return [nbformat.v4.new_markdown_cell(heading), nbformat.v4.new_code_cell(
            "print()", outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)])]

    gamma = _notebook("Gamma: in parts", *step("## Set-up", "set up\n"),
                      *step("## 0. Zero", "step zero\n"), *step("## 1. One", "step one\n"),
                      *step("## Checks", "checked\n"))
    nbformat.write(gamma, str(notebooks / "03_gamma.ipynb"))
    gamma.metadata["papermill"] = {"duration": 61.0}
    nbformat.write(gamma, str(out / "03_gamma.ipynb"))
    (out / "03_gamma.summary.json").write_text('{"status": "ok"}')

    def course(second_steps):
        part = {"notebook": "03_gamma", "minutes": 20, "teaches": "x."}
        (playbooks / "course.yaml").write_text(yaml.safe_dump({"path": [
            {**part, "steps": "0-0", "prerequisites": ["PySpark"]},
            {**part, "steps": second_steps, "prerequisites": ["03_gamma"]}], "for_authors": []}))
        return read_course(playbooks / "course.yaml")

    index = book.render_book(course("1-1"), out, notebooks, playbooks, ["03_gamma"])
    first, second = (out / "03_gamma.html").read_text(), (out / "03_gamma-part-2.html").read_text()
    assert "set up" in first and "step zero" in first and "step one" not in first
    assert "step one" in second and "checked" in second and "step zero" not in second
    assert "Part 1 of 2" in _shown(first) and 'href="03_gamma-part-2.html"' in first
    assert "Part 2 of 2" in _shown(second) and "lesson 2 of 2" in _shown(second)
    assert "previous: 03_gamma, steps 0 to 0" in _shown(second)
    rows = _rows(index.read_text())
    assert [row[1][1] for row in rows] == [["03_gamma.html"], ["03_gamma-part-2.html"]]
    assert [row[3][0] for row in rows] == ["1 min 1 s", "with part 1"]
    assert "1 notebook in 2 lessons, about 40 minutes" in index.read_text()
    assert dead_links(out) == []
    with pytest.raises(RunbookError, match=r"03_gamma has no step 2 \(## 2\. \.\.\.\), which "
                                           r"course.yaml's part 'steps: 1-2' names"):
        book.render_book(course("1-2"), out, notebooks, playbooks, ["03_gamma"])
