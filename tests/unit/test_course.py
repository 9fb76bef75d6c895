"""The learning path, ``runbooks/course.yaml``: it lists every notebook of notebooks/ once (or once
per part, each part's steps following the last), the template apart, and a course file that is
wrong is refused in one line. No Spark needed."""
from __future__ import annotations

import pytest
import yaml

from state_runbooks.book.course import check_covers, missing_and_unknown, read_course
from state_runbooks.cli.runbook_files import repo_notebooks_dir, runbook_notebooks
from state_runbooks.common.errors import RunbookError

NOTEBOOKS = repo_notebooks_dir()
COURSE_PATH = NOTEBOOKS.parent / "runbooks" / "course.yaml"


def test_the_course_lists_exactly_the_notebooks_there_are():
    missing, unknown = missing_and_unknown(read_course(COURSE_PATH), NOTEBOOKS)
    assert not missing, f"runbooks/course.yaml does not list {', '.join(missing)}"
    assert not unknown, f"runbooks/course.yaml lists {', '.join(unknown)}, not in notebooks/"


def test_the_path_holds_the_runbooks_and_the_template_is_for_authors():
    course = read_course(COURSE_PATH)
    assert sorted({x.notebook for x in course.path}) == [p.stem for p in
                                                         runbook_notebooks(NOTEBOOKS)]
    assert [x.notebook for x in course.for_authors] == ["00_template"]


def test_each_lesson_says_what_it_teaches_in_one_sentence_and_takes_a_sitting():
    for lesson in read_course(COURSE_PATH).lessons:
        assert 10 <= lesson.minutes <= 90, lesson.notebook
        assert lesson.teaches.endswith(".") and lesson.teaches.count(". ") == 0, lesson.notebook
        assert lesson.prerequisites, lesson.notebook


def _lesson(notebook, prerequisites=(), minutes=10):
    return {"notebook": notebook, "minutes": minutes, "prerequisites": list(prerequisites),
            "teaches": f"What {notebook} teaches."}


def _course_file(tmp_path, path, for_authors=()):
    target = tmp_path / "course.yaml"
    target.write_text(yaml.safe_dump({"path": list(path), "for_authors": list(for_authors)}))
    return target


def test_a_notebook_added_to_the_folder_is_named_until_the_course_lists_it(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for stem in ("00_template", "01_first", "11_new_runbook"):
        (notebooks / f"{stem}.ipynb").write_text("{}")
    course_path = _course_file(tmp_path, [_lesson("01_first")], [_lesson("00_template")])
    with pytest.raises(RunbookError, match=r"does not list 11_new_runbook: "):
        check_covers(read_course(course_path), notebooks, course_path)
    (notebooks / "11_new_runbook.ipynb").unlink()
    (notebooks / "01_first.ipynb").unlink()
    with pytest.raises(RunbookError, match=r"lists 01_first, not in"):
        check_covers(read_course(course_path), notebooks, course_path)


@pytest.mark.parametrize("content, message", [
    ("path: [", "cannot read the course"),
    ("- 01_first\n", "expected the sections path, for_authors"),
    ("path: []\n", "expected the sections path, for_authors"),
    ("path: [01_first]\nfor_authors: []\n", "path entry 1: expected the fields"),
    ("path:\n  - {notebook: first, minutes: 5, prerequisites: [], teaches: x.}\nfor_authors: []\n",
     "notebook must be a notebook's name"),
    ("path:\n  - {notebook: 01_a, minutes: '5', prerequisites: [], teaches: x.}\nfor_authors: []\n",
     r"\(01_a\): minutes must be a whole number above 0"),
    ("path:\n  - {notebook: 01_a, minutes: 5, prerequisites: x, teaches: x.}\nfor_authors: []\n",
     "prerequisites must be a list"),
    ("path:\n  - {notebook: 01_a, minutes: 5, prerequisites: [], teaches: ''}\nfor_authors: []\n",
     "teaches must be one sentence"),
], ids=["not YAML", "no sections", "one section", "a name, not an entry", "notebook", "minutes",
        "prerequisites", "teaches"])
def test_a_wrong_course_file_is_refused_in_one_line(tmp_path, content, message):
    target = tmp_path / "course.yaml"
    target.write_text(content)
    with pytest.raises(RunbookError, match=message) as refused:
        read_course(target)
    assert "\n" not in str(refused.value)


def test_a_prerequisite_notebook_comes_earlier_and_each_notebook_once(tmp_path):
    later = _course_file(tmp_path, [_lesson("01_a", ["02_b"]), _lesson("02_b")])
    with pytest.raises(RunbookError, match="01_a needs 02_b, which does not come before it"):
        read_course(later)
    twice = _course_file(tmp_path, [_lesson("01_a")], [_lesson("01_a")])
    with pytest.raises(RunbookError, match="01_a is listed twice"):
        read_course(twice)
    words = _course_file(tmp_path, [_lesson("01_a", ["PySpark basics"]), _lesson("02_b", ["01_a"])],
                         [_lesson("00_t", ["02_b"])])
    assert [x.notebook for x in read_course(words).path] == ["01_a", "02_b"]


def test_a_notebook_studied_in_parts_is_listed_once_per_part_in_order(tmp_path):
    part = {"prerequisites": ["PySpark basics"], "teaches": "x.", "minutes": 20}
    course = read_course(_course_file(tmp_path, [
        {"notebook": "01_a", "steps": "0-4", **part}, _lesson("02_b", ["01_a"]),
        {"notebook": "01_a", "steps": "5-8", **part, "prerequisites": ["01_a", "02_b"]}]))
    first, _, second = course.path
    assert (first.page, first.part, first.parts, first.label) == ("01_a", 1, 2, "01_a, steps 0 to 4")
    assert (second.page, second.part, second.steps) == ("01_a-part-2", 2, (5, 8))
    assert course.notebooks == ("01_a", "02_b") and course.parts_of("01_a") == (first, second)


@pytest.mark.parametrize("parts, message", [
    ([None, "5-8"], "01_a is listed twice: list it in the path once per part"),
    (["0-4", "6-8"], "01_a's parts must follow one another: steps 0-4, then from 5"),
    (["4-0", "5-8"], r"\(01_a\): steps must be a range of its steps, e.g. 0-4"),
    (["0-x"], r"\(01_a\): steps must be a range"),
], ids=["one without steps", "a gap", "backwards", "not a range"])
def test_parts_that_do_not_follow_one_another_are_refused_in_one_line(tmp_path, parts, message):
    entries = [{**_lesson("01_a"), **({"steps": steps} if steps else {})} for steps in parts]
    with pytest.raises(RunbookError, match=message) as refused:
        read_course(_course_file(tmp_path, entries))
    assert "\n" not in str(refused.value)
