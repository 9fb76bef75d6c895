"""The playbooks, the glossary and the schedule files as pages of the course book, so that a
lesson's link to a term or a playbook opens in the book (:mod:`.links` says where each page goes).
Each is a notebook of markdown cells rendered by the same exporter as the lessons: one look."""
from __future__ import annotations

import pathlib
import posixpath

from .links import BookPages, page_path, rewrite_links, with_heading_anchors

PLAYBOOKS = "runbooks"  # the folder of the source tree the playbooks are in, and of their pages


def playbook_sources(playbooks_dir: pathlib.Path) -> frozenset[str]:
    """The playbooks' files as paths of the source tree: ``runbooks/<name>.md`` and
    ``runbooks/schedules/<name>.yaml``."""
    files = [*playbooks_dir.glob("*.md"), *playbooks_dir.glob("schedules/*.yaml")]
    return frozenset(posixpath.join(PLAYBOOKS, p.relative_to(playbooks_dir).as_posix())
                     for p in files)


def title(text: str, fallback: str) -> str:
    """A playbook's title: its first heading, without the ``#``."""
    heading = next((line for line in text.splitlines() if line.startswith("# ")), "")
    return heading.lstrip("#").strip() or fallback


def _navigation(source: str, index: str) -> str:
    here = posixpath.dirname(page_path(source))
    guide = posixpath.relpath(page_path(f"{PLAYBOOKS}/README.md"), here)
    glossary = posixpath.relpath(page_path(f"{PLAYBOOKS}/glossary.md"), here)
    return (f"**Course book** · [all lessons]({posixpath.relpath(index, here)}) · "
            f"[the playbooks]({guide}) · [the glossary]({glossary})")


def playbook_markdown(source: str, text: str, book: BookPages, index: str) -> list[str]:
    """The markdown cells of a playbook's page: navigation, the playbook (a schedule file shown
    as its YAML), navigation again."""
    if source.endswith(".yaml"):
        body = f"# `{source}`\n\nA schedule file: the parameters of a scheduled run.\n\n" \
               f"```yaml\n{text.rstrip()}\n```"
    else:
        body = with_heading_anchors(rewrite_links(text, source, book))
    nav = _navigation(source, index)
    return [f"{nav}\n\n---", body, f"---\n\n{nav}"]


def render_playbooks(playbooks_dir: pathlib.Path, out_dir: pathlib.Path, book: BookPages,
                     index: str, write_page) -> dict[str, str]:
    """A page under ``<out>/runbooks/`` for each playbook the book carries; ``write_page(nb,
    target, title)`` renders one. Returns the title of each playbook's page (not the schedule
    files'), by its path in the book, for the index."""
    import nbformat

    titles = {}
    for source in sorted(book.playbooks):
        text = (playbooks_dir / posixpath.relpath(source, PLAYBOOKS)).read_text(encoding="utf-8")
        cells = [nbformat.v4.new_markdown_cell(part)
                 for part in playbook_markdown(source, text, book, index)]
        target = out_dir / page_path(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        name = title(text, posixpath.basename(source))
        write_page(nbformat.v4.new_notebook(cells=cells), target, name)
        if source.endswith(".md"):
            titles[page_path(source)] = name
    return titles
