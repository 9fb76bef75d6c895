"""The build step that puts the runbooks into the package; the rest is in pyproject.toml.

``notebooks/`` and ``runbooks/`` stay the one source in the repository: building a wheel copies them
to ``state_runbooks/bundle/`` in the build folder, so an installed package runs and exports them
(``state-runbooks run``, ``list``, ``export``). An editable install (``pip install -e .``) gets no
copy: it reads the clone's own folders (``state_runbooks.running.notebooks``).
"""
import pathlib
import shutil

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
        for folder in BUNDLED:
            shutil.copytree(ROOT / folder, target / folder,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))


setup(cmdclass={"build_py": BuildPyWithRunbooks})
