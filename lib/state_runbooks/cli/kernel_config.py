"""Installing the kernel configuration (``state-runbooks install-kernel-config``): JVM output kept
out of notebook cells, and the kernel of :mod:`.kernel`, which does not wait for Spark's JVM at
shutdown."""
from __future__ import annotations

import pathlib
import shutil
import sys
from importlib import resources


def install_kernel_config(prefix: str | None = None) -> pathlib.Path:
    """Copy ``ipython_kernel_config.py`` to ``<prefix>/etc/ipython/`` (prefix: this environment)."""
    target_dir = pathlib.Path(prefix or sys.prefix) / "etc" / "ipython"
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / "ipython_kernel_config.py"
    source = resources.files("state_runbooks") / "resources" / "ipython_kernel_config.py"
    with resources.as_file(source) as src:
        shutil.copyfile(src, target)
    return target
