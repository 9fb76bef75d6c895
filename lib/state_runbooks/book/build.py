"""``state-runbooks book``: the course's demos run (the command line's runner), then every page
rendered from what they left: the lessons that ran (:mod:`.pages`), the playbooks
(:mod:`.playbooks`) and the index."""
from __future__ import annotations

import json
import pathlib
import shutil

from state_runbooks.cli.headless import RunOutcome, demo_starts, report
from state_runbooks.cli.in_order import run_in_order
from state_runbooks.cli.runbook_files import (
    notebooks_folder,
    playbooks_folder,
    purpose,
    resolve_notebook,
)

from .course import Course, check_covers, read_course
from .links import BookPages
from .pages import (
    INDEX,
    demo_seconds,
    demo_status,
    executed_notebook,
    is_built,
    render_index,
    render_page,
)
from .playbooks import PLAYBOOKS, playbook_sources, render_playbooks

OUTPUTS = (".ipynb", ".html", ".summary.json")


def _spark_versions(out_dir: pathlib.Path, stems: list[str]) -> set[str]:
    versions = set()
    for stem in stems:
        try:
            summary = json.loads((out_dir / f"{stem}.summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(summary, dict) and summary.get("spark_version"):  # none: Spark never started
            versions.add(str(summary["spark_version"]))
    return versions


def render_book(course: Course, out_dir: pathlib.Path, notebooks_dir: pathlib.Path,
                playbooks_dir: pathlib.Path, notebooks: list[str],
                failures: dict[str, str | None] | None = None) -> pathlib.Path:
    """A page for each of ``notebooks`` whose demo ran, one for each playbook, then the index.
    Runs nothing: ``failures`` are the runner's one-line reasons, for demos without a summary."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter()

    def write_page(nb, target: pathlib.Path, name: str) -> pathlib.Path:
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": name}})
        target.write_text(body, encoding="utf-8")
        return target

    chosen = [stem for stem in course.notebooks if stem in notebooks]
    statuses = {stem: demo_status(out_dir, stem, (failures or {}).get(stem)) for stem in chosen}
    executed = {stem: executed_notebook(out_dir, stem) for stem in chosen}
    for stem in chosen:
        if is_built(statuses[stem]) and executed[stem] is None:
            statuses[stem] = ("failed", "the demo left no executed notebook")
    built = [stem for stem in chosen if is_built(statuses[stem])]
    book = BookPages(frozenset(built), playbook_sources(playbooks_dir))
    for stem in chosen:
        for lesson in course.parts_of(stem):
            if stem in built:
                render_page(lesson, course, executed[stem], out_dir, book, statuses[stem],
                            write_page)
            else:  # an earlier run's page would show what this one did not
                (out_dir / f"{lesson.page}.html").unlink(missing_ok=True)
    shutil.rmtree(out_dir / PLAYBOOKS, ignore_errors=True)
    playbooks = render_playbooks(playbooks_dir, out_dir, book, INDEX, write_page)
    titles = {stem: purpose(notebooks_dir / f"{stem}.ipynb") for stem in chosen}
    return render_index(course, out_dir, chosen, statuses, titles, playbooks,
                        _spark_versions(out_dir, chosen), write_page,
                        {stem: demo_seconds(executed[stem]) for stem in built})


def build_book(out_dir: pathlib.Path, names: list[str] | None = None, interactive: bool = False,
               jobs: int = 1) -> tuple[list[RunOutcome], pathlib.Path]:
    """Run the demos of the course's notebooks (``names``: only those; ``jobs`` at a time), in its
    order, into ``out_dir``, then render the book. The course must list exactly the notebooks
    there are."""
    notebooks_dir, playbooks_dir = notebooks_folder(), playbooks_folder()
    course_path = playbooks_dir / "course.yaml"
    course = read_course(course_path)
    check_covers(course, notebooks_dir, course_path)
    wanted = {resolve_notebook(name, notebooks_dir).stem for name in names or []}
    chosen = [stem for stem in course.notebooks if not wanted or stem in wanted]
    for stem in chosen:
        for suffix in OUTPUTS:  # a page shows this run, never an earlier one's leftovers
            (out_dir / f"{stem}{suffix}").unlink(missing_ok=True)
    outcomes = run_in_order(demo_starts([notebooks_dir / f"{stem}.ipynb" for stem in chosen],
                                        out_dir), jobs, interactive)
    failures = {o.notebook.stem: o.failure for o in outcomes}
    return outcomes, render_book(course, out_dir, notebooks_dir, playbooks_dir, chosen, failures)


def book_command(names: list[str], out_dir: pathlib.Path, interactive: bool, jobs: int = 1) -> int:
    """``state-runbooks book``: a line per demo, the table of outputs, then where the book is and
    which lessons it could not build."""
    outcomes, index = build_book(out_dir, names, interactive, jobs)
    print(report(outcomes, out_dir))
    stems = [o.notebook.stem for o in outcomes]
    missing = [stem for stem in stems if not (index.parent / f"{stem}.html").exists()]
    pages = len(stems) - len(missing)
    print(f"course book: {index} ({pages} page{'' if pages == 1 else 's'}"
          + (f"; not built: {', '.join(missing)})" if missing else ")"))
    return 1 if any(o.failure for o in outcomes) or missing else 0
