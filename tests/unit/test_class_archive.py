"""The class archive for the demo's JVMs: used by ``state-runbooks demo`` where make recorded one,
never by a runbook run on its own; nothing recorded here (no JVM starts)."""
from __future__ import annotations

import sys

import pytest

from state_runbooks.cli import headless
from state_runbooks.cli import main as cli_main
from state_runbooks.cli.headless import RunOutcome
from state_runbooks.cli.runbook_files import runbook_notebooks
from state_runbooks.dev import class_archive


@pytest.fixture
def archive(tmp_path, monkeypatch):
    path = tmp_path / "spark.jsa"
    monkeypatch.setattr(class_archive, "archive_path", lambda: path)
    monkeypatch.delenv(class_archive.SUBMIT_OPTIONS_ENV, raising=False)
    return path


def test_the_archive_is_kept_in_the_environment_per_java_and_pyspark():
    from importlib.metadata import version
    path = class_archive.archive_path()
    assert path.parent == class_archive.Path(sys.prefix) / "share" / "state-runbooks"
    assert path.name.startswith(f"spark-{version('pyspark')}-") and path.suffix == ".jsa"
    assert class_archive.archive_path() == path  # the same key each time


def test_the_demo_maps_spark_classes_from_the_archive_where_there_is_one(archive):
    assert class_archive.demo_environment() == {}  # none recorded: the JVMs start as before
    archive.write_bytes(b"")
    assert class_archive.demo_environment() == {
        "SPARK_SUBMIT_OPTS": f"-XX:SharedArchiveFile={archive} -Xlog:cds=off,cds+dynamic=off"}


def test_jvm_options_given_to_the_demo_are_kept_as_they_are(archive, monkeypatch):
    archive.write_bytes(b"")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Xss4m")
    assert class_archive.demo_environment() == {}


def test_only_the_demo_runs_with_it(archive, tmp_path, monkeypatch):
    """``state-runbooks run`` starts its runbook's JVM exactly as before."""
    archive.write_bytes(b"")
    given = {}

    class Recorded:  # a run that ends at once, noting what its child would have been given
        def __init__(self, notebook, out_dir, parameters, demo, parameters_file, environment):
            given.setdefault(notebook.stem, []).append(environment)
            self.notebook = notebook

        def ended(self, timeout=0):
            return True

        def finish(self):
            return RunOutcome(self.notebook, "ok", 0, [], None)

    monkeypatch.setattr(cli_main, "ChildRun", Recorded)
    monkeypatch.setattr(headless, "ChildRun", Recorded)
    cli_main.main(["run", "03_inspect_state", "--out", str(tmp_path)])
    assert given.pop("03_inspect_state") == [{}]
    cli_main.main(["demo", "--out", str(tmp_path)])
    assert sorted(given) == [p.stem for p in runbook_notebooks()] and all(
        environment == [class_archive.demo_environment()] for environment in given.values())
