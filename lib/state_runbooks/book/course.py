"""The course's learning path, read from ``runbooks/course.yaml``, its one source: the notebooks in
the order to study them, each with the minutes it takes, its prerequisites and what it teaches, and
the template apart, for authors. The course book (:mod:`.pages`) renders it."""
from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError

COURSE_FILE = "course.yaml"
_FIELDS = {"notebook", "minutes", "prerequisites", "teaches"}
_SECTIONS = ("path", "for_authors")
_NOTEBOOK_NAME = re.compile(r"^\d\d_\w+$")


@dataclass(frozen=True)
class Lesson:
    notebook: str  # the notebook's stem, e.g. 03_inspect_state
    minutes: int
    prerequisites: tuple[str, ...]  # notebook stems or plain words
    teaches: str


@dataclass(frozen=True)
class Course:
    path: tuple[Lesson, ...]  # the order to study them in
    for_authors: tuple[Lesson, ...]

    @property
    def lessons(self) -> tuple[Lesson, ...]:
        return self.path + self.for_authors

    def lesson(self, notebook: str) -> Lesson:
        return next(lesson for lesson in self.lessons if lesson.notebook == notebook)


def is_notebook_name(prerequisite: str) -> bool:
    return bool(_NOTEBOOK_NAME.match(prerequisite))


def read_course(path: pathlib.Path) -> Course:
    """The course in ``path``; a one-line RunbookError naming the entry that is wrong."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RunbookError(f"cannot read the course {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict) or set(data) != set(_SECTIONS):
        raise RunbookError(f"{path}: expected the sections {', '.join(_SECTIONS)}")
    course = Course(*(tuple(_lesson(path, section, i, entry)
                            for i, entry in enumerate(data[section] or []))
                      for section in _SECTIONS))
    _check_order(path, course)
    return course


def _lesson(path: pathlib.Path, section: str, index: int, entry) -> Lesson:
    where = f"{path}: {section} entry {index + 1}"
    if not isinstance(entry, dict) or set(entry) != _FIELDS:
        raise RunbookError(f"{where}: expected the fields {', '.join(sorted(_FIELDS))}")
    notebook, minutes, prerequisites, teaches = (entry[k] for k in
                                                 ("notebook", "minutes", "prerequisites", "teaches"))
    if not isinstance(notebook, str) or not is_notebook_name(notebook):
        raise RunbookError(f"{where}: notebook must be a notebook's name, e.g. 03_inspect_state")
    if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
        raise RunbookError(f"{where} ({notebook}): minutes must be a whole number above 0")
    if not isinstance(prerequisites, list) or not all(
            isinstance(p, str) and p.strip() for p in prerequisites):
        raise RunbookError(f"{where} ({notebook}): prerequisites must be a list of names or words")
    if not isinstance(teaches, str) or not teaches.strip():
        raise RunbookError(f"{where} ({notebook}): teaches must be one sentence")
    return Lesson(notebook, minutes, tuple(prerequisites), teaches.strip())


def _check_order(path: pathlib.Path, course: Course) -> None:
    """Each notebook once, and a notebook named as a prerequisite comes earlier in the path."""
    seen: set[str] = set()
    for lesson in course.lessons:
        if lesson.notebook in seen:
            raise RunbookError(f"{path}: {lesson.notebook} is listed twice")
        earlier = seen if lesson in course.path else {x.notebook for x in course.path}
        for prerequisite in filter(is_notebook_name, lesson.prerequisites):
            if prerequisite not in earlier:
                raise RunbookError(f"{path}: {lesson.notebook} needs {prerequisite}, which does "
                                   "not come before it in the path")
        seen.add(lesson.notebook)


def missing_and_unknown(course: Course, notebooks_dir: pathlib.Path) -> tuple[list[str], list[str]]:
    """The notebooks of ``notebooks_dir`` the course does not list, and those it lists that are
    not there."""
    present = {p.stem for p in notebooks_dir.glob("[0-9][0-9]_*.ipynb")}
    listed = {lesson.notebook for lesson in course.lessons}
    return sorted(present - listed), sorted(listed - present)


def check_covers(course: Course, notebooks_dir: pathlib.Path, course_path: pathlib.Path) -> None:
    """A one-line RunbookError unless the course lists exactly the notebooks there are."""
    missing, unknown = missing_and_unknown(course, notebooks_dir)
    if missing:
        raise RunbookError(f"{course_path} does not list {', '.join(missing)}: add each to its "
                           "path (or for_authors) with minutes, prerequisites and teaches")
    if unknown:
        raise RunbookError(f"{course_path} lists {', '.join(unknown)}, not in {notebooks_dir}")
