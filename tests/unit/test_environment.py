"""The Java check that make setup and the session helper run before Spark starts."""
from __future__ import annotations

import os
import stat

import pytest

from state_runbooks.common.environment import JavaMissing, check_java, java_major_version


def _fake_java_home(tmp_path, version_line: str) -> str:
    """A JAVA_HOME whose bin/java prints ``version_line`` on stderr, as real java -version does."""
    java = tmp_path / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return str(tmp_path)


@pytest.mark.parametrize("line,major", [('openjdk version "17.0.15" 2025-04-15', 17),
                                        ('openjdk version "21" 2023-09-19', 21),
                                        ('java version "1.8.0_292"', 8),
                                        ('openjdk version "11.0.2" 2019-01-15', 11)])
def test_parses_java_versions(tmp_path, line, major):
    home = _fake_java_home(tmp_path, line)
    assert java_major_version(os.path.join(home, "bin", "java")) == major


def test_old_java_is_refused_with_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", _fake_java_home(tmp_path, 'openjdk version "11.0.2"'))
    with pytest.raises(JavaMissing) as excinfo:
        check_java()
    message = str(excinfo.value)
    assert "\n" not in message
    assert "is Java 11" in message and "install OpenJDK 17" in message


def test_missing_java_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(JavaMissing, match="has no bin/java: install OpenJDK 17"):
        check_java()
