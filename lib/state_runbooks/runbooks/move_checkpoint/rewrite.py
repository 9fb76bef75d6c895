"""The files a move writes, computed before anything is written, and the ones they replace.

- A source move: ``offsets/N-1`` and ``offsets/N`` with the moved source's line set to its start
  (every other line, the metadata with the watermark and the pinned settings, kept); the moved
  source's own log folder replaced by the start's log (a file source's seen files).
- Wherever the result is not where the checkpoint was written (a new location, or a copy
  rewritten in place): every schema file path operator metadata v2 names moved under the
  result's root (:func:`state_runbooks.core.named_locations.relocated`).

Nothing else changes: the ``metadata`` file (the query id), every commit, every state file.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.core import offset_log
from state_runbooks.core.fs.base import file_of_sidecar, is_checksum_file, sidecar_of
from state_runbooks.core.named_locations import metadata_v2_files, relocated

from .checks import Checks


@dataclass
class Rewrite:
    """What the move writes (path -> bytes) and the checkpoint's files it replaces."""
    files: dict = field(default_factory=dict)
    replaced: list = field(default_factory=list)  # as listed, sidecars included

    def replaces(self, rel: str) -> bool:
        return rel in self.replaced

    @property
    def moved_aside(self) -> list[str]:
        """In place, what goes into the backup (the procedure takes each file's sidecar with
        it)."""
        return [rel for rel in self.replaced if not is_checksum_file(rel)]


def _offsets_with(data: bytes, lines: dict[int, str | None]) -> bytes:
    entry = offset_log.parse(data)
    sources = tuple(offset_log.SourceOffset(s.name, lines[i]) if i in lines else s
                    for i, s in enumerate(entry.sources))
    return offset_log.serialize(offset_log.OffsetsText(entry.version, entry.metadata, sources))


def plan_rewrite(ckpt, checks: Checks, inventory: dict, result_root: str) -> Rewrite:
    """The rewrite for ``checks`` when the result's root is ``result_root``."""
    out = Rewrite()
    if checks.move == "source":
        lines = {p: s.line for p, s in checks.starts.items()}
        batch = checks.moves.batch_id
        for b in (batch - 1, batch):
            rel = f"offsets/{b}"
            if rel in inventory:
                out.files[rel] = _offsets_with(ckpt.fs.read_bytes(rel), lines)
        for move in checks.moves.moving:
            folder = move.log_folder
            out.replaced += [rel for rel in inventory if rel.startswith(folder + "/")]
            for name, data in checks.starts[move.position].log.items():
                out.files[f"{folder}/{name}"] = data
    if result_root.rstrip("/") != ckpt.root.rstrip("/") or checks.move == "location":
        for rel in metadata_v2_files(ckpt.fs):
            text = ckpt.fs.read_text(rel)
            moved = relocated(text, rel, result_root)
            if moved != text:
                out.files[rel] = moved.encode("utf-8")
    for rel in list(out.files):
        if rel in inventory:
            out.replaced.append(rel)
    out.replaced += [sidecar_of(rel) for rel in out.replaced if sidecar_of(rel) in inventory]
    out.replaced = sorted(set(out.replaced))
    return out


def copied_files(inventory: dict, rewrite: Rewrite) -> list[str]:
    """What a new location gets from the checkpoint as it is: every file but those the move
    replaces (sidecars follow their files)."""
    return sorted(rel for rel in inventory if not rewrite.replaces(rel)
                  and not (is_checksum_file(rel) and rewrite.replaces(file_of_sidecar(rel))))
