"""The course's learning path, read from ``runbooks/course.yaml``, its one source: the notebooks in
the order to study them, each with the minutes it takes, its prerequisites and what it teaches, and
the template apart, for authors. The course book (:mod:`.pages`) renders it.

A notebook too long for one sitting is studied in parts: it is listed once per part, each with the
``steps`` it covers (``0-4``, then ``5-8``), and the book gives each part its own page."""
from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass, replace

from state_runbooks.common.errors import RunbookError

COURSE_FILE = "course.yaml"
_FIELDS = {"notebook", "minutes", "prerequisites", "teaches"}
_OPTIONAL = {"steps"}
_STEPS = re.compile(r"^(\d+)-(\d+)$")
_SECTIONS = ("path", "for_authors")
_NOTEBOOK_NAME = re.compile(r"^\d\d_\w+$")


@dataclass(frozen=True)
class Lesson:
    notebook: str  # the notebook's stem, e.g. 03_inspect_state
    minutes: int
    prerequisites: tuple[str, ...]  # notebook stems or plain words
    teaches: str
    steps: tuple[int, int] | None = None  # a part: its first and last step; None: the whole
    part: int = 0  # which part of its notebook (1, 2, ...); 0: the whole notebook
    parts: int = 0  # how many parts its notebook is studied in; 0: one, the whole

    @property
    def page(self) -> str:
        """The name of its page in the book: the notebook's, or for a later part
        ``<notebook>-part-<n>``."""
        return self.notebook if self.part <= 1 else f"{self.notebook}-part-{self.part}"

    @property
    def label(self) -> str:
        """The notebook's name, and for a part the steps it covers."""
        if self.steps is None:
            return self.notebook
        return f"{self.notebook}, steps {self.steps[0]} to {self.steps[1]}"


@dataclass(frozen=True)
class Course:
    path: tuple[Lesson, ...]  # the order to study them in
    for_authors: tuple[Lesson, ...]

    @property
    def lessons(self) -> tuple[Lesson, ...]:
        return self.path + self.for_authors

    def parts_of(self, notebook: str) -> tuple[Lesson, ...]:
        """The lessons of a notebook: the whole, or its parts in order."""
        return tuple(lesson for lesson in self.lessons if lesson.notebook == notebook)

    @property
    def notebooks(self) -> tuple[str, ...]:
        """Each notebook once, in the order its first lesson comes."""
        return tuple(dict.fromkeys(lesson.notebook for lesson in self.lessons))


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
    course = _numbered_parts(path, course)
    _check_order(path, course)
    return course


def _lesson(path: pathlib.Path, section: str, index: int, entry) -> Lesson:
    where = f"{path}: {section} entry {index + 1}"
    if not isinstance(entry, dict) or not _FIELDS <= set(entry) <= _FIELDS | _OPTIONAL:
        raise RunbookError(f"{where}: expected the fields {', '.join(sorted(_FIELDS))} (and "
                           f"steps, for a part)")
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
    steps = None
    if "steps" in entry:
        found = _STEPS.match(str(entry["steps"]))
        if not found or int(found[1]) > int(found[2]):
            raise RunbookError(f"{where} ({notebook}): steps must be a range of its steps, e.g. "
                               "0-4")
        steps = (int(found[1]), int(found[2]))
    return Lesson(notebook, minutes, tuple(prerequisites), teaches.strip(), steps)


def _numbered_parts(path: pathlib.Path, course: Course) -> Course:
    """Each part numbered; a notebook listed more than once must be listed in parts that follow
    one another (``0-4``, then ``5-8``), in the path."""
    def numbered(lesson: Lesson) -> Lesson:
        parts = [x for x in course.lessons if x.notebook == lesson.notebook]
        if len(parts) == 1 and lesson.steps is None:
            return lesson
        if any(x.steps is None for x in parts) or any(x not in course.path for x in parts):
            raise RunbookError(f"{path}: {lesson.notebook} is listed twice: list it in the path "
                               "once per part, each with the steps it covers")
        for before, after in zip(parts, parts[1:]):
            if after.steps[0] != before.steps[1] + 1:
                raise RunbookError(f"{path}: {lesson.notebook}'s parts must follow one another: "
                                   f"steps {before.steps[0]}-{before.steps[1]}, then from "
                                   f"{before.steps[1] + 1}")
        return replace(lesson, part=parts.index(lesson) + 1, parts=len(parts))

    return Course(tuple(map(numbered, course.path)), tuple(map(numbered, course.for_authors)))


def _check_order(path: pathlib.Path, course: Course) -> None:
    """A notebook named as a prerequisite comes earlier in the path (each notebook is listed once,
    or once per part: :func:`_numbered_parts`)."""
    seen: set[str] = set()
    for lesson in course.lessons:
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
