"""The course book (``state-runbooks book``): every notebook run on its demo, each executed notebook
rendered as a page (nbconvert: its plots, its verdict, and a header with its place in the course),
and an index in the order of the learning path (:mod:`.course`) with each demo's status.

Pages and index are notebooks rendered by nbconvert's HTML exporter; the header and the index are
markdown cells, so the book has one look and no HTML of its own.
"""
from __future__ import annotations

import json
import pathlib
import re

from state_runbooks.cli.headless import RunOutcome, demo_starts, report
from state_runbooks.cli.in_order import run_in_order
from state_runbooks.cli.runbook_files import (
    notebooks_folder,
    playbooks_folder,
    purpose,
    resolve_notebook,
)

from .course import Course, Lesson, check_covers, is_notebook_name, read_course

INDEX = "index.html"
OUTPUTS = (".ipynb", ".html", ".summary.json")
_NOTEBOOK_LINK = re.compile(r"\]\((\d\d_\w+)\.ipynb(#[^)\s]*)?\)")


def _text(value: str) -> str:
    """Plain text inside markdown: no markup, no HTML, no table cell break."""
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|#])", r"\\\1", value)


def _link(stem: str, pages: set[str]) -> str:
    return f"[{_text(stem)}]({stem}.html)" if stem in pages else _text(stem)


def _prerequisites(lesson: Lesson, pages: set[str]) -> str:
    return ", ".join(_link(p, pages) if is_notebook_name(p) else _text(p)
                     for p in lesson.prerequisites) or "none"


def demo_status(out_dir: pathlib.Path, stem: str, failure: str | None = None) -> tuple[str, str]:
    """A demo's status from its summary JSON, and why it stopped ("" when it did not):
    ``failed`` with the runner's one line when it left no summary."""
    try:
        summary = json.loads((out_dir / f"{stem}.summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ("failed", failure or "the demo left no summary") if failure else ("not run", "")
    error = summary.get("error") or {}
    why = f"{error.get('type')}: {error.get('message')} (step: {error.get('step')})" if error else ""
    return summary.get("status", "unknown"), why or (failure or "")


def _verdict(status: str, why: str) -> str:
    return f"**{_text(status)}**: {_text(why)}" if why else f"**{_text(status)}**"


def _header(lesson: Lesson, course: Course, pages: list[str], status: tuple[str, str]) -> str:
    order = [x.notebook for x in course.path if x.notebook in pages]
    if lesson.notebook in order:
        at = order.index(lesson.notebook)
        place = [f"lesson {at + 1} of {len(order)}"]
        if at > 0:
            place.append(f"previous: {_link(order[at - 1], set(pages))}")
        if at + 1 < len(order):
            place.append(f"next: {_link(order[at + 1], set(pages))}")
    else:
        place = ["for authors: the conventions"]
    return "\n".join([
        f"**Course book** · [all lessons]({INDEX}) · {' · '.join(place)}", "",
        f"About {lesson.minutes} minutes. "
        f"**Prerequisites:** {_prerequisites(lesson, set(pages))}. "
        f"**What it teaches:** {_text(lesson.teaches)}", "",
        f"Demo status: {_verdict(*status)}", "", "---"])


def render_page(lesson: Lesson, course: Course, out_dir: pathlib.Path,
                notebooks_dir: pathlib.Path, pages: list[str], status: tuple[str, str],
                exporter) -> pathlib.Path:
    """``<out>/<notebook>.html``: the executed notebook (the source one when the demo left none),
    led by the course header; links to other notebooks of the book go to their pages."""
    import nbformat

    try:
        nb = nbformat.read(str(out_dir / f"{lesson.notebook}.ipynb"), as_version=4)
    except (OSError, ValueError):  # none, or cut short by a kernel that died while writing it
        nb = nbformat.read(str(notebooks_dir / f"{lesson.notebook}.ipynb"), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _NOTEBOOK_LINK.sub(
                lambda m: f"]({m[1]}.html{m[2] or ''})" if m[1] in pages else m[0], cell.source)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(_header(lesson, course, pages, status)))
    return _write(nb, out_dir / f"{lesson.notebook}.html", lesson.notebook, exporter)


def _table(lessons: list[Lesson], statuses: dict, titles: dict, pages: set[str]) -> str:
    rows = ["| # | Notebook | Minutes | Prerequisites | What it teaches | Demo status |",
            "|---|---|---|---|---|---|"]
    for number, lesson in enumerate(lessons, 1):
        cells = [str(number), f"{_link(lesson.notebook, pages)}: {_text(titles[lesson.notebook])}",
                 str(lesson.minutes), _prerequisites(lesson, pages), _text(lesson.teaches),
                 _verdict(*statuses[lesson.notebook])]
        rows.append(f"| {' | '.join(cells)} |")
    return "\n".join(rows)


def render_index(course: Course, out_dir: pathlib.Path, pages: list[str], statuses: dict,
                 titles: dict, spark_versions: set[str], exporter) -> pathlib.Path:
    """``<out>/index.html``: the lessons of this book in the path's order, then the template."""
    import nbformat

    path = [x for x in course.path if x.notebook in pages]
    authors = [x for x in course.for_authors if x.notebook in pages]
    ran_on = f" on Spark {', '.join(sorted(spark_versions))}" if spark_versions else ""
    intro = (
        "# The course book: the state stores of Spark Structured Streaming\n\n"
        "Each page is a runbook run on its demo: a small checkpoint written by a real streaming "
        f"query{ran_on}, taken apart step by step, with its plots and its verdict. Study them in "
        "this order, gentlest first. A demo's status is `warning` or `critical` where its demo "
        "builds the problem it teaches; `error` or `failed` means it stopped, and its page shows "
        "where.")
    cells = [nbformat.v4.new_markdown_cell(intro)]
    if path:
        cells.append(nbformat.v4.new_markdown_cell(
            f"## The learning path: {len(path)} notebooks, about "
            f"{sum(x.minutes for x in path)} minutes\n\n"
            + _table(path, statuses, titles, set(pages))))
    if authors:
        cells.append(nbformat.v4.new_markdown_cell(
            "## For authors: the conventions\n\n"
            "Not part of the path: the template every runbook follows, for those who go on to "
            "write one.\n\n" + _table(authors, statuses, titles, set(pages))))
    return _write(nbformat.v4.new_notebook(cells=cells), out_dir / INDEX, "Course book", exporter)


def _write(nb, target: pathlib.Path, title: str, exporter) -> pathlib.Path:
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    target.write_text(body, encoding="utf-8")
    return target


def render_book(course: Course, out_dir: pathlib.Path, notebooks_dir: pathlib.Path,
                notebooks: list[str], failures: dict[str, str | None] | None = None
                ) -> pathlib.Path:
    """A page for each of ``notebooks`` from what its run left in ``out_dir``, then the index.
    Runs nothing: ``failures`` are the runner's one-line reasons, for demos without a summary."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter()
    pages = [x.notebook for x in course.lessons if x.notebook in notebooks]
    statuses = {stem: demo_status(out_dir, stem, (failures or {}).get(stem)) for stem in pages}
    for stem in pages:
        render_page(course.lesson(stem), course, out_dir, notebooks_dir, pages, statuses[stem],
                    exporter)
    titles = {stem: purpose(notebooks_dir / f"{stem}.ipynb") for stem in pages}
    versions = set()
    for stem in pages:
        try:
            summary = json.loads((out_dir / f"{stem}.summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(summary, dict) and summary.get("spark_version"):  # none: Spark never started
            versions.add(str(summary["spark_version"]))
    return render_index(course, out_dir, pages, statuses, titles, versions, exporter)


def build_book(out_dir: pathlib.Path, names: list[str] | None = None, interactive: bool = False,
               jobs: int = 1) -> tuple[list[RunOutcome], pathlib.Path]:
    """Run the demos of the course's notebooks (``names``: only those; ``jobs`` at a time), in its
    order, into ``out_dir``, then render the book. The course must list exactly the notebooks
    there are."""
    notebooks_dir = notebooks_folder()
    course_path = playbooks_folder() / "course.yaml"
    course = read_course(course_path)
    check_covers(course, notebooks_dir, course_path)
    wanted = {resolve_notebook(name, notebooks_dir).stem for name in names or []}
    chosen = [x.notebook for x in course.lessons if not wanted or x.notebook in wanted]
    for stem in chosen:
        for suffix in OUTPUTS:  # a page shows this run, never an earlier one's leftovers
            (out_dir / f"{stem}{suffix}").unlink(missing_ok=True)
    outcomes = run_in_order(demo_starts([notebooks_dir / f"{stem}.ipynb" for stem in chosen],
                                        out_dir), jobs, interactive)
    failures = {o.notebook.stem: o.failure for o in outcomes}
    return outcomes, render_book(course, out_dir, notebooks_dir, chosen, failures)


def book_command(names: list[str], out_dir: pathlib.Path, interactive: bool, jobs: int = 1) -> int:
    """``state-runbooks book``: a line per demo, the table of outputs, then where the book is."""
    outcomes, index = build_book(out_dir, names, interactive, jobs)
    print(report(outcomes, out_dir))
    print(f"course book: {index} ({len(outcomes)} page{'' if len(outcomes) == 1 else 's'})")
    return 1 if any(o.failure for o in outcomes) else 0
