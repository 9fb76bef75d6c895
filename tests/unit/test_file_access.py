"""Summary paths: which are URIs for the Hadoop file system and which are local files."""
from __future__ import annotations

import pytest

from state_runbooks.running.results import is_uri


@pytest.mark.parametrize("path,uri", [("s3a://b/x.json", True), ("dbfs:/x.json", True),
                                      ("file:/x.json", True), ("/Volumes/c/s/v/x.json", False),
                                      ("out/x.json", False), ("C:\\out\\x.json", False)])
def test_summary_paths_are_told_apart(path, uri):
    assert is_uri(path) is uri
