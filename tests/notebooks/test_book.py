"""The course book as a reader sees it: built by ``state-runbooks book`` for two notebooks (the
template, and 06 whose demo draws a plot), then opened in headless Chromium. The index links each
page with its demo's status, each page shows every plot its notebook drew, decoded and not blank
on screen, every link of every page (lessons, playbooks, glossary, schedules) opens in the browser
on the anchor it names, and no page shows a link's Markdown as text."""
from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import nbformat
import pytest
from state_runbooks.dev.chromium_page import chromium_binary, chromium_page, non_white_share

BOOK = ["00_template", "06_monitor_state"]  # the quickest demo, and a demo with a plot
_PLOT_REGION = """(() => {
    const image = document.images[%d];
    image.scrollIntoView();
    const box = image.getBoundingClientRect();
    return {x: box.x + window.scrollX, y: box.y + window.scrollY,
            width: box.width, height: box.height};
})()"""


def _plots(executed: pathlib.Path) -> int:
    nb = nbformat.read(str(executed), as_version=4)
    return sum("image/png" in output.get("data", {})
               for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs)


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    command = [str(pathlib.Path(sys.executable).parent / "state-runbooks"), "book", *BOOK,
               "--out", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"course book: {out / 'index.html'} (2 pages)" in proc.stdout
    return out


@pytest.fixture(scope="module")
def page():
    binary = chromium_binary()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    with chromium_page(binary) as opened:
        yield opened


@pytest.mark.slow
@pytest.mark.notebook
def test_the_index_links_every_page_with_its_demo_status(built_book, page, tmp_path):
    page.open(built_book / "index.html")
    links = page.evaluate("[...document.querySelectorAll('td a')].map(a => a.getAttribute('href'))")
    assert sorted(set(links)) == [f"{stem}.html" for stem in BOOK]
    rows = page.evaluate("[...document.querySelectorAll('tbody tr')]"
                         ".map(r => [...r.cells].map(c => c.innerText.trim()))")
    statuses = {row[1].split(":")[0]: row[-1] for row in rows}
    assert statuses == {stem: json.loads((built_book / f"{stem}.summary.json").read_text())["status"]
                        for stem in BOOK}
    screenshot = page.screenshot(tmp_path / "index.png")
    assert non_white_share(screenshot) > 0.01  # text and tables drawn, not an empty window


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("stem", BOOK)
def test_a_page_shows_every_plot_of_its_notebook(built_book, page, tmp_path, stem):
    page.open(built_book / f"{stem}.html")
    expected = _plots(built_book / f"{stem}.ipynb")
    assert stem != "06_monitor_state" or expected >= 1
    images = page.evaluate("[...document.images].map(i => i.complete && i.naturalWidth > 0)")
    assert images == [True] * expected  # as many as the notebook drew, every one decoded
    status = json.loads((built_book / f"{stem}.summary.json").read_text())["status"]
    assert f"Demo status: {status}" in page.evaluate("document.body.innerText")
    for number in range(expected):
        region = page.evaluate(_PLOT_REGION % number)
        assert region["width"] > 200 and region["height"] > 100, region
        shot = page.screenshot(tmp_path / f"{stem}-plot-{number}.png", clip=region)
        assert non_white_share(shot) > 0.03, f"plot {number} of {stem} looks blank on screen"


_LOCAL_LINKS = "[...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))" \
               ".filter(h => !/^[a-z]+:/.test(h))"
# What a reader sees of each rendered Markdown cell, code left out: a link Markdown did not render
# shows as [text](target) there.
_PROSE = """[...document.querySelectorAll('.jp-RenderedMarkdown')].map(cell => {
    const copy = cell.cloneNode(true);
    copy.querySelectorAll('pre, code').forEach(code => code.remove());
    return copy.innerText;
})"""


@pytest.mark.slow
@pytest.mark.notebook
def test_every_link_of_every_page_opens_on_its_anchor_and_none_shows_raw(built_book, page):
    pages = sorted(built_book.rglob("*.html"))
    assert len(pages) > 2 + 10  # the lessons, the index, the playbooks and the schedules
    targets, raw = {}, []
    for path in pages:
        page.open(path)
        raw += [f"{path.name}: {m}" for text in page.evaluate(_PROSE)
                for m in re.findall(r"\[[^\]]*\]\([^)]*\)", text)]
        for href in page.evaluate(_LOCAL_LINKS):
            file, _, anchor = href.partition("#")
            target = (path.parent / file).resolve() if file else path
            targets.setdefault(target, set()).add(anchor)
    assert raw == []
    missing = []
    for target, anchors in sorted(targets.items()):
        try:
            page.open(target)
        except FileNotFoundError as error:
            missing.append(str(error))
            continue
        missing += [f"{target.name}#{a}" for a in sorted(anchors - {""})
                    if not page.evaluate(f"document.getElementById({json.dumps(a)}) !== null")]
    assert missing == []
