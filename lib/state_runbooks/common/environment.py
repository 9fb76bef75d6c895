"""Checks the machine before Spark starts: Java 17 or newer must be there.

Standard library only, so ``make setup`` can run it with the system Python before any virtual
environment exists: ``python3 lib/state_runbooks/common/environment.py``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

MIN_JAVA = 17
INSTALL_HINT = ("install OpenJDK 17 or 21 (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
                "macOS: brew install openjdk@17; conda: conda install -c conda-forge openjdk=17) "
                "and put it on PATH or set JAVA_HOME")


class JavaMissing(RuntimeError):
    """Java is absent or too old for Spark 4."""


def java_executable() -> str | None:
    """The java Spark will use: $JAVA_HOME/bin/java if JAVA_HOME is set, else java on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def java_major_version(executable: str) -> int | None:
    """Parse ``java -version`` (which prints on stderr): 1.8.0_x -> 8, 17.0.15 -> 17."""
    try:
        out = subprocess.run([executable, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_java() -> int:
    """Return the Java major version, or raise JavaMissing with one line saying what to install."""
    executable = java_executable()
    if executable is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get("JAVA_HOME") \
            else "no java on PATH"
        raise JavaMissing(f"Spark 4 needs Java {MIN_JAVA}+, but {where}: {INSTALL_HINT}.")
    major = java_major_version(executable)
    if major is None:
        raise JavaMissing(f"Spark 4 needs Java {MIN_JAVA}+, but '{executable} -version' did not run: "
                          f"{INSTALL_HINT}.")
    if major < MIN_JAVA:
        raise JavaMissing(f"Spark 4 needs Java {MIN_JAVA}+, but {executable} is Java {major}: "
                          f"{INSTALL_HINT}.")
    return major


def main() -> int:
    try:
        major = check_java()
    except JavaMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Java {major} found ({java_executable()}).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
