"""The course book's lesson pages and its index. A lesson's page is its executed notebook (its
plots, its verdict) with its place in the course above and below it; the index lists the lessons
in the order of the learning path (:mod:`.course`) with each demo's status, and a lesson whose
demo failed is not a page: the index says why and which log holds the rest.

Pages and index are notebooks rendered by nbconvert's HTML exporter; the header and the index are
markdown cells, so the book has one look and no HTML of its own.
"""
from __future__ import annotations

import json
import pathlib
import re

from state_runbooks.cli.headless import LOG_FOLDER
from state_runbooks.common.errors import RunbookError

from .course import Course, Lesson, is_notebook_name
from .links import BookPages, rewrite_links

INDEX = "index.html"
NOT_BUILT = ("error", "failed", "not run")  # a demo that stopped, or left nothing: no page


def _text(value: str) -> str:
    """Plain text inside markdown: no markup, no HTML, no table cell break."""
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|#])", r"\\\1", value)


def _link(stem: str, pages: set[str], text: str = "") -> str:
    """A link to the page ``stem`` where the book has it (``pages``), else its text alone."""
    shown = _text(text or stem)
    return f"[{shown}]({stem}.html)" if stem in pages else shown


def _lesson_link(lesson: Lesson, pages: set[str]) -> str:
    return _link(lesson.page, pages, lesson.label)


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


def is_built(status: tuple[str, str]) -> bool:
    """Whether a lesson gets a page: its demo ran to its verdict (which may be ``critical``)."""
    return status[0] not in NOT_BUILT


def demo_seconds(nb) -> float | None:
    """How long the demo's run took, as papermill recorded it in the executed notebook (None:
    not recorded)."""
    duration = (nb.metadata.get("papermill") or {}).get("duration") if nb is not None else None
    return float(duration) if isinstance(duration, (int, float)) else None


def _run_time(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def _study(lesson: Lesson, seconds: float | None) -> str:
    """A lesson's time: to study it, and its demo's run as measured when the book was made."""
    ran = f", and its demo ran in {_run_time(seconds)} when this book was made" if seconds else ""
    return f"About {lesson.minutes} minutes to study{ran}."


def _verdict(status: str, why: str) -> str:
    return f"**{_text(status)}**: {_text(why)}" if why else f"**{_text(status)}**"


def _not_built(stem: str, status: tuple[str, str], out_dir: pathlib.Path) -> str:
    """The index's word for a lesson without a page: why, and the log that holds the rest."""
    log = f"{LOG_FOLDER}/{stem}.log"
    where = f"[{log}]({log})" if (out_dir / log).exists() else _text(log)
    return f"**not built**: {_text(': '.join(x for x in status if x))}, see {where}"


def _pages(course: Course, lessons: list[str]) -> set[str]:
    """The pages of the lessons whose notebooks are built (``lessons``)."""
    return {x.page for x in course.lessons if x.notebook in lessons}


def _place(lesson: Lesson, course: Course, lessons: list[str]) -> str:
    """The navigation line: the index, and the lesson's place among the lessons built."""
    order = [x for x in course.path if x.notebook in lessons]
    pages = _pages(course, lessons)
    if lesson in order:
        at = order.index(lesson)
        place = [f"lesson {at + 1} of {len(order)}"]
        if at > 0:
            place.append(f"previous: {_lesson_link(order[at - 1], pages)}")
        if at + 1 < len(order):
            place.append(f"next: {_lesson_link(order[at + 1], pages)}")
    else:
        place = ["for authors: the conventions"]
    return f"**Course book** · [all lessons]({INDEX}) · {' · '.join(place)}"


def _part(lesson: Lesson, course: Course, lessons: list[str]) -> str:
    """For a lesson that is a part of its notebook: which, and where the other parts are."""
    if not lesson.parts:
        return ""
    others = ", ".join(_lesson_link(x, _pages(course, lessons))
                       for x in course.parts_of(lesson.notebook) if x != lesson)
    return (f"**Part {lesson.part} of {lesson.parts}** of this notebook: steps {lesson.steps[0]} "
            f"to {lesson.steps[1]}; the other part{'s' if lesson.parts > 2 else ''}: {others}. ")


def _header(lesson: Lesson, course: Course, lessons: list[str], status: tuple[str, str],
            seconds: float | None) -> str:
    return "\n".join([
        _place(lesson, course, lessons), "",
        f"{_part(lesson, course, lessons)}{_study(lesson, seconds)} "
        f"**Prerequisites:** {_prerequisites(lesson, set(lessons))}. "
        f"**What it teaches:** {_text(lesson.teaches)}", "",
        f"Demo status: {_verdict(*status)}", "", "---"])


def _step_heading(cell, step: int) -> bool:
    return cell.cell_type == "markdown" and cell.source.startswith(f"## {step}. ")


def part_cells(cells: list, lesson: Lesson) -> list:
    """The cells of a lesson: every cell of its notebook, or for a part those from its first
    step's heading (the first part: from the top) up to the next part's (the last: to the
    end). A one-line RunbookError when the notebook has no such step."""
    if lesson.steps is None:
        return list(cells)
    first, last = lesson.steps

    def at(step: int) -> int:
        found = [i for i, cell in enumerate(cells) if _step_heading(cell, step)]
        if not found:
            raise RunbookError(f"{lesson.notebook} has no step {step} (## {step}. ...), which "
                               f"course.yaml's part 'steps: {first}-{last}' names")
        return found[0]

    start = 0 if lesson.part == 1 else at(first)
    at(last)  # the part's last step is there too
    end = len(cells) if lesson.part == lesson.parts else at(last + 1)
    return list(cells[start:end])


def executed_notebook(out_dir: pathlib.Path, stem: str):
    """The notebook a demo's run left, None when it left none or one cut short (a kernel that
    died while writing it)."""
    import nbformat

    try:
        return nbformat.read(str(out_dir / f"{stem}.ipynb"), as_version=4)
    except (OSError, ValueError):
        return None


def render_page(lesson: Lesson, course: Course, nb, out_dir: pathlib.Path, book: BookPages,
                status: tuple[str, str], write_page) -> pathlib.Path:
    """``<out>/<page>.html``: the executed notebook ``nb`` (for a part, its cells of that part),
    led by the course header and followed by its navigation; its links go to the book's pages
    (:mod:`.links`)."""
    import copy

    import nbformat

    source = f"notebooks/{lesson.notebook}.ipynb"
    nb = copy.deepcopy(nb)  # a notebook studied in parts gives each part its own page
    nb.cells = part_cells(nb.cells, lesson)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = rewrite_links(cell.source, source, book)
    lessons = sorted(book.lessons)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(_header(lesson, course, lessons, status,
                                                             demo_seconds(nb))))
    nb.cells.append(nbformat.v4.new_markdown_cell(f"---\n\n{_place(lesson, course, lessons)}"))
    return write_page(nb, out_dir / f"{lesson.page}.html", lesson.page)


def _table(lessons: list[Lesson], statuses: dict, titles: dict, pages: set[str],
           out_dir: pathlib.Path, demo_times: dict) -> str:
    rows = ["| # | Notebook | Minutes | Demo ran in | Prerequisites | What it teaches "
            "| Demo status |", "|---|---|---|---|---|---|---|"]
    for number, lesson in enumerate(lessons, 1):
        stem, status = lesson.notebook, statuses[lesson.notebook]
        seconds = demo_times.get(stem)
        ran = "with part 1" if lesson.part > 1 else _run_time(seconds) if seconds else "-"
        cells = [str(number), f"{_lesson_link(lesson, pages)}: {_text(titles[stem])}",
                 str(lesson.minutes), ran,
                 _prerequisites(lesson, pages), _text(lesson.teaches),
                 _verdict(*status) if is_built(status) else _not_built(stem, status, out_dir)]
        rows.append(f"| {' | '.join(cells)} |")
    return "\n".join(rows)


def render_index(course: Course, out_dir: pathlib.Path, chosen: list[str], statuses: dict,
                 titles: dict, playbooks: dict[str, str], spark_versions: set[str],
                 write_page, demo_times: dict | None = None) -> pathlib.Path:
    """``<out>/index.html``: the lessons of this book in the path's order, the template, then the
    playbooks (``playbooks``: each page's path and title)."""
    import nbformat

    path = [x for x in course.path if x.notebook in chosen]
    authors = [x for x in course.for_authors if x.notebook in chosen]
    times = demo_times or {}
    pages = _pages(course, [stem for stem in chosen if is_built(statuses[stem])])
    ran_on = f" on Spark {', '.join(sorted(spark_versions))}" if spark_versions else ""
    intro = (
        "# The course book: the state stores of Spark Structured Streaming\n\n"
        "Each page is a runbook run on its demo: a small checkpoint written by a real streaming "
        f"query{ran_on}, taken apart step by step, with its plots and its verdict. Study them in "
        "this order, gentlest first. A demo's status is `warning` or `critical` where its demo "
        "builds the problem it teaches; a lesson whose demo stopped has no page, and the table "
        "says why and which log holds the rest.")
    cells = [nbformat.v4.new_markdown_cell(intro)]
    if path:
        ran = [times[x.notebook] for x in path if times.get(x.notebook) and x.part <= 1]
        notebooks = len({x.notebook for x in path})
        parts = f" in {len(path)} lessons" if len(path) != notebooks else ""
        cells.append(nbformat.v4.new_markdown_cell(
            f"## The learning path: {notebooks} notebook{'s' if notebooks != 1 else ''}{parts}, "
            "about "
            f"{sum(x.minutes for x in path)} minutes of study"
            + (f", and {_run_time(sum(ran))} of demos run when this book was made" if ran else "")
            + "\n\n" + _table(path, statuses, titles, pages, out_dir, times)))
    if authors:
        cells.append(nbformat.v4.new_markdown_cell(
            "## For authors: the conventions\n\n"
            "Not part of the path: the template every runbook follows, for those who go on to "
            "write one.\n\n" + _table(authors, statuses, titles, pages, out_dir, times)))
    if playbooks:
        cells.append(nbformat.v4.new_markdown_cell(
            "## The playbooks and the glossary\n\n"
            "From a symptom to the runbook to run and how to read its verdict; the glossary "
            "explains each term the lessons link.\n\n"
            + "\n".join(f"- [{_text(name)}]({page})" for page, name in playbooks.items())))
    return write_page(nbformat.v4.new_notebook(cells=cells), out_dir / INDEX, "Course book")
