"""The package as its users get it: built from a fresh clone into a wheel, installed into a fresh
virtual environment, run by name outside any clone.

How the test gets there, and why:

- *Fresh clone*: the files git would check out (tracked, and new files not ignored) are copied to a
  temporary folder, so leftovers of local builds (``build/``, ``.venv/``) cannot leak into the
  wheel, and the repository is left untouched.
- *Build*: as ``python -m build`` does, without needing it: the sdist first, then the wheel from
  the unpacked sdist (so the sdist is proven to carry ``notebooks/`` and ``runbooks/`` too), by
  setuptools' PEP 517 hooks in a build environment holding only ``[build-system] requires``
  (installed from the package registry, or pip's cache).
- *Fresh environment*: a new venv with the wheel installed and nothing else of the repository. Its
  dependencies (pyspark, Jupyter: about a gigabyte) are not downloaded again: a ``.pth`` file names
  the project venv's site-packages. A ``.pth`` adds its folder to ``sys.path`` without reading the
  ``.pth`` files inside it, so the project's editable install (whose ``.pth`` names ``lib/``) stays
  out of sight; the wheel goes in before the ``.pth`` so pip sees no other copy of the package.
  ``JUPYTER_PATH`` names the project venv's ``share/jupyter`` (nbconvert's templates), which a
  real install of the dependencies would have put into the new environment.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

import nbformat
import pytest

import state_runbooks

pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]
VERSION = state_runbooks.__version__
RUNBOOKS = sorted(p.stem for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")
                  if not p.name.startswith("00_"))
SCHEDULES = sorted(p.name for p in (REPO / "runbooks" / "schedules").glob("*.yaml"))


def _run(command, cwd, env=None, timeout=600, check=True) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def _fresh_clone(target: pathlib.Path) -> pathlib.Path:
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], REPO)
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is not copied
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _hook(python, hook: str, out: pathlib.Path, cwd: pathlib.Path) -> pathlib.Path:
    code = f"from setuptools import build_meta; print(build_meta.{hook}({str(out)!r}))"
    return out / _run([python, "-c", code], cwd).stdout.strip().splitlines()[-1]


def _purelib(python) -> pathlib.Path:
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    return pathlib.Path(_run([python, "-c", code], REPO).stdout.strip())


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel, and a fresh environment holding it: (wheel, bin folder, env, folder to run in)."""
    base = tmp_path_factory.mktemp("installed")
    clone = _fresh_clone(base / "clone")
    # What a run could leave beside the notebooks is never packaged: only the files kept there.
    (clone / "notebooks" / "left-behind" / "offsets").mkdir(parents=True)
    (clone / "notebooks" / "left-behind" / "offsets" / "0").write_text("v1\n{}\n")
    (clone / "notebooks" / "left-behind.summary.json").write_text("{}")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]

    builder = base / "build-env"
    _run([sys.executable, "-m", "venv", "--without-pip", builder], base)
    requires = json.loads(re.search(r"^requires = (\[.*\])$", (REPO / "pyproject.toml").read_text(),
                                    re.M).group(1))  # [build-system]'s, a JSON-compatible list
    _run(pip + ["--python", builder / "bin" / "python", "install", "--quiet", *requires], base)
    sdist = _hook(builder / "bin" / "python", "build_sdist", base / "dist", clone)
    with tarfile.open(sdist) as archive:
        archive.extractall(base / "unpacked", filter="data")
    unpacked = base / "unpacked" / sdist.name.removesuffix(".tar.gz")
    wheel = _hook(builder / "bin" / "python", "build_wheel", base / "dist", unpacked)

    env_dir = base / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", env_dir], base)
    python = env_dir / "bin" / "python"
    _run(pip + ["--python", python, "install", "--quiet", "--no-deps", "--no-index", wheel], base)
    (_purelib(python) / "project-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "JUPYTER_PATH")}
    env["JUPYTER_PATH"] = str(pathlib.Path(sys.prefix) / "share" / "jupyter")
    elsewhere = base / "elsewhere"  # no clone above it
    elsewhere.mkdir()
    _run([env_dir / "bin" / "state-runbooks", "install-kernel-config"], elsewhere, env)
    return wheel, env_dir / "bin", env, elsewhere


def test_the_wheel_carries_the_runbooks_and_schedules(installed):
    wheel = installed[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    for stem in RUNBOOKS:
        assert f"state_runbooks/bundle/notebooks/{stem}.ipynb" in names
    for schedule in SCHEDULES:
        assert f"state_runbooks/bundle/runbooks/schedules/{schedule}" in names
    assert "state_runbooks/bundle/runbooks/README.md" in names
    assert not [n for n in names if "left-behind" in n]
    assert wheel.name == f"spark_state_runbooks-{VERSION}-py3-none-any.whl"
    print(f"wheel: {wheel.stat().st_size / 1024:.0f} KiB, {len(names)} files")


def test_the_installed_library_and_kernel_are_the_new_environment(installed):
    _, bin_dir, env, elsewhere = installed
    code = ("import state_runbooks; from jupyter_client.manager import KernelManager; "
            "print(state_runbooks.__file__); "
            "print(KernelManager(kernel_name='python3').format_kernel_cmd()[0])")
    library, kernel_python = _run([bin_dir / "python", "-c", code], elsewhere, env).stdout.split()
    assert pathlib.Path(library).is_relative_to(bin_dir.parent)
    assert pathlib.Path(kernel_python).parent.resolve() == bin_dir.resolve()


def test_list_names_every_runbook(installed):
    _, bin_dir, env, elsewhere = installed
    listed = _run([bin_dir / "state-runbooks", "list"], elsewhere, env).stdout.splitlines()
    assert [line.split()[0] for line in listed[:len(RUNBOOKS)]] == RUNBOOKS
    assert all(len(line.split()) > 2 for line in listed[:len(RUNBOOKS)])  # each with its purpose
    assert "bundle/notebooks" in listed[-1] and VERSION in listed[-1]


def test_every_runbook_is_found_by_name(installed):
    """Each runbook resolves by name and its parameters are read from the packaged notebook: an
    unknown parameter is refused in one line, before any kernel starts (so one process runs the
    command line for all of them)."""
    _, bin_dir, env, elsewhere = installed
    code = ("import sys; from state_runbooks.cli.main import main; "
            "sys.exit(sum(main(['run', name, '-p', 'nonsense', '1', '--out', 'refused']) "
            "for name in sys.argv[1:]))")
    names = [stem.split("_", 1)[1] for stem in RUNBOOKS]  # inspect_state: as a user types it
    done = _run([bin_dir / "python", "-c", code, *names], elsewhere, env, check=False)
    assert done.returncode == len(RUNBOOKS)
    for stem in RUNBOOKS:
        assert f"FAILED {stem}: RunbookError: {stem} has no parameter nonsense" in done.stdout
        summary = json.loads((elsewhere / "refused" / f"{stem}.summary.json").read_text())
        assert summary["status"] == "error" and summary["runbook_version"] == VERSION


def test_a_runbook_runs_by_name_outside_any_clone(installed, demo_factory):
    _, bin_dir, env, elsewhere = installed
    # 01 on a checkpoint a query wrote (the demos run in the notebook tier), with its HTML report.
    # Relative paths mean the folder the command runs from, not the notebook's.
    checkpoint = os.path.relpath(demo_factory("two_operators", "hdfs").checkpoint_path
                                 .removeprefix("file:"), elsewhere)
    done = _run([bin_dir / "state-runbooks", "run", "01_enable_rocksdb", "-p", "checkpoint_path",
                 checkpoint, "-p", "summary_path", "summaries/01.json", "--out", "out"],
                elsewhere, env, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + (elsewhere / "out/logs/01_enable_rocksdb.log"
                                                ).read_text()[-3000:]
    summary = json.loads((elsewhere / "summaries" / "01.json").read_text())
    assert summary["runbook_version"] == VERSION and summary["status"] in ("ok", "warning")
    assert (elsewhere / "out" / "01_enable_rocksdb.html").exists()
    # The packaged notebook ran in the output folder: nothing was written into the installation.
    bundle = next(bin_dir.parent.glob("lib/python*/site-packages/state_runbooks/bundle"))
    assert {p.name for p in (bundle / "notebooks").iterdir()} == \
        {p.name for p in (REPO / "notebooks").iterdir() if p.suffix == ".ipynb"}


def test_a_schedule_file_is_named_by_its_stem(installed):
    _, bin_dir, env, elsewhere = installed
    done = _run([bin_dir / "state-runbooks", "run", "03_inspect_state", "-f", "inspect_state",
                 "--out", "scheduled"], elsewhere, env, check=False)
    assert done.returncode == 1
    assert "RunbookError: checkpoint_path is still the placeholder" in done.stdout


def test_export_writes_importable_notebooks(installed):
    _, bin_dir, env, elsewhere = installed
    done = _run([bin_dir / "state-runbooks", "export", "exported"], elsewhere, env)
    assert f"wrote {len(RUNBOOKS)} notebooks" in done.stdout
    exported = sorted((elsewhere / "exported" / "notebooks").glob("*.ipynb"))
    assert [p.stem for p in exported] == RUNBOOKS
    for path in exported:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
        assert nb.metadata["state_runbooks"]["version"] == VERSION
    assert sorted(p.name for p in (elsewhere / "exported/runbooks/schedules").glob("*.yaml")) == \
        SCHEDULES


def test_golden_refuses_outside_a_clone(installed):
    _, bin_dir, env, elsewhere = installed
    done = _run([bin_dir / "state-runbooks", "golden"], elsewhere, env, check=False)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: notebooks/ not found: run from a clone installed with pip install -e ."]
