"""Where the links of the runbooks' markdown go in the course book.

The notebooks link the playbooks (``../runbooks/glossary.md#checkpoint``) and each other
(``03_inspect_state.ipynb#Step-2``); the playbooks link the notebooks, each other and the schedule
files. The book carries each as a page: a lesson at its root (``03_inspect_state.html``), a playbook
under ``runbooks/`` (``runbooks/glossary.html``), a schedule file under ``runbooks/schedules/``. A
link is rewritten to its page, relative to the page it is on; a link to what the book does not carry
(a lesson whose demo failed, one not asked for) keeps its text and loses the link, so that no link of
the book goes nowhere.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

PLAYBOOK_SUFFIXES = (".md", ".yaml")
# [text](target), not an image; the text may hold one level of brackets (``[`x[0]`](y)``).
_LINK = re.compile(r"(?<!!)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^()\s]+)\)")
_FENCE = re.compile(r"(^```.*?^```[ \t]*$)", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class BookPages:
    """What the book carries: the lessons whose pages were built, and the playbooks' files as
    paths in the source tree (``runbooks/glossary.md``, ``runbooks/schedules/x.yaml``)."""
    lessons: frozenset[str]
    playbooks: frozenset[str]

    def page(self, source: str) -> str | None:
        """The book's page for a file of the source tree, None when the book does not carry it."""
        stem = posixpath.splitext(posixpath.basename(source))[0]
        carried = stem in self.lessons if source.startswith("notebooks/") else source in self.playbooks
        return page_path(source) if carried else None


def page_path(source: str) -> str:
    """Where the page of a file of the source tree goes in the book: a notebook at its root, a
    playbook or schedule file where it is under ``runbooks/``."""
    folder, name = posixpath.split(source)
    stem = posixpath.splitext(name)[0]
    return f"{stem}.html" if folder == "notebooks" else posixpath.join(folder, f"{stem}.html")


def _is_local(target: str) -> bool:
    return not (target.startswith("#") or "://" in target or target.startswith("mailto:"))


def rewrite_links(markdown: str, source: str, book: BookPages) -> str:
    """``markdown`` of the source file ``source`` (a path in the source tree) with each local link
    pointing at its page of the book, relative to the page of ``source``."""
    here = posixpath.dirname(page_path(source)) or "."

    def rewrite(match: re.Match) -> str:
        text, target = match[1], match[2]
        if not _is_local(target):
            return match[0]
        path, hash_, anchor = target.partition("#")
        page = book.page(posixpath.normpath(posixpath.join(posixpath.dirname(source), path)))
        if page is None:
            return text
        return f"[{text}]({posixpath.relpath(page, here)}{hash_}{anchor})"

    return _outside_fences(markdown, lambda part: _LINK.sub(rewrite, part))


def heading_slug(heading: str) -> str:
    """The anchor a heading gets where the playbooks are read as Markdown (GitHub's rule): its
    text without markup, lowercased, punctuation dropped, spaces as hyphens."""
    text = _LINK.sub(lambda m: m[1], heading)
    text = re.sub(r"<[^>]+>", "", text).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def with_heading_anchors(markdown: str) -> str:
    """Every heading given the anchor the playbooks' links use (a page of the book names headings
    its own way): a heading without its own ``<a id>`` gets one; a repeated one counts up. Lines
    in fenced code (a ``# comment`` of a shell example) are not headings."""
    seen: dict[str, int] = {}

    def anchor(match: re.Match) -> str:
        marks, text = match[1], match[2]
        if "<a id=" in text:
            return match[0]
        slug = heading_slug(text)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        return f'{marks} <a id="{slug if count == 0 else f"{slug}-{count}"}"></a>{text}'

    return _outside_fences(markdown, lambda part: _HEADING.sub(anchor, part))


def _outside_fences(markdown: str, change) -> str:
    """``change`` applied to the markdown outside its fenced code blocks."""
    parts = _FENCE.split(markdown)
    return "".join(part if _FENCE.fullmatch(part) else change(part) for part in parts)
