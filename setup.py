"""The build step that puts the runbooks into the package; the rest is in pyproject.toml.

``notebooks/`` and ``runbooks/`` stay the one source in the repository: building a wheel copies them
to ``state_runbooks/bundle/`` in the build folder, so an installed package runs and exports them
(``state-runbooks run``, ``list``, ``export``). An editable install (``pip install -e .``) gets no
copy: it reads the clone's own folders (``state_runbooks.cli.runbook_files``).
"""
import pathlib
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent
BUNDLED = ("notebooks", "runbooks")  # siblings, as in the repository: links to ../runbooks/ hold


class BuildPyWithRunbooks(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        target = pathlib.Path(self.build_lib) / "state_runbooks" / "bundle"
        shutil.rmtree(target, ignore_errors=True)  # a runbook removed since the last build goes too
        tracked = _tracked(BUNDLED)
        for folder in BUNDLED:
            if tracked is None:  # an sdist: what it carries
                shutil.copytree(ROOT / folder, target / folder,
                                ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
                continue
            for rel in tracked:
                if rel.parts[0] == folder:
                    (target / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(ROOT / rel, target / rel)


def _tracked(folders):
    """The files git tracks in ``folders`` (in a checkout): only they are packaged, never what a
    run left beside them. None outside a checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", *folders], cwd=ROOT, check=True,
                                capture_output=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return None
    files = [pathlib.PurePosixPath(p) for p in listed.split("\0") if p]
    return [p for p in files if (ROOT / p).is_file()] or None


setup(cmdclass={"build_py": BuildPyWithRunbooks})
