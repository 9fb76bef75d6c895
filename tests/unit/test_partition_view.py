"""The view of one state partition (core/fs/partition_view.py): the logs' folders linked whole,
state files one by one, partition ``p``'s as partition 0 beside partition 0's ``_metadata``; removed
on close without touching what the links point to."""
from __future__ import annotations

import os

from state_runbooks.core.fs.aliases import remove_links
from state_runbooks.core.fs.partition_view import link_partition

FILES = ["metadata", "offsets/0", "commits/0", "state/0/_metadata/metadata",
         "state/0/0/_metadata/schema", "state/0/0/1.delta", "state/0/3/1.delta",
         "state/0/3/SSTs/a.sst", "state/0/3/left-x/1.delta", "state/0/0/left-x/_metadata/schema",
         "state/1/3/1.delta"]


def _checkpoint(root) -> str:
    for rel in FILES:
        path = root / "checkpoint" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    return str(root / "checkpoint")


def _view_files(view: str) -> dict[str, str]:
    found = {}
    for here, dirs, files in os.walk(view):
        linked = [os.path.relpath(os.path.join(here, d), view) for d in dirs
                  if os.path.islink(os.path.join(here, d))]
        assert set(linked) <= {"offsets", "commits"}, "a state folder linked"  # logs: live
        files += [d for d in dirs if os.path.islink(os.path.join(here, d))]
        for name in files:
            path = os.path.join(here, name)
            assert os.path.islink(path)
            found[os.path.relpath(path, view)] = (
                sorted(os.listdir(path)) if os.path.isdir(path) else open(path).read())
    return found


def test_the_view_holds_partition_p_as_0_beside_partition_0s_metadata(tmp_path):
    local = _checkpoint(tmp_path)
    view = str(tmp_path / "view" / "checkpoint")
    link_partition(local, view, 0, 3)
    assert _view_files(view) == {
        "metadata": "metadata", "offsets": ["0"], "commits": ["0"],
        "state/0/_metadata/metadata": "state/0/_metadata/metadata",
        "state/0/0/_metadata/schema": "state/0/0/_metadata/schema",
        "state/0/0/left-x/_metadata/schema": "state/0/0/left-x/_metadata/schema",
        "state/0/0/1.delta": "state/0/3/1.delta", "state/0/0/SSTs/a.sst": "state/0/3/SSTs/a.sst",
        "state/0/0/left-x/1.delta": "state/0/3/left-x/1.delta"}


def test_closing_the_view_removes_links_never_what_they_point_to(tmp_path):
    local = _checkpoint(tmp_path)
    folder = tmp_path / "view"
    link_partition(local, str(folder / "checkpoint"), 0, 3)
    remove_links(str(folder))
    assert not folder.exists()
    assert all((tmp_path / "checkpoint" / rel).read_text() == rel for rel in FILES)
