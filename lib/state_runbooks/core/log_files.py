"""Read one log file of a checkpoint (``metadata``, ``offsets/<batch>``, ``commits/<batch>``):
a damaged one (cut short, emptied, overwritten, bytes that no longer match its ``.crc`` sidecar)
raises a :class:`~state_runbooks.common.errors.RunbookError` that names it in one line, never a
Python or Java traceback.
"""
from __future__ import annotations

import json

from state_runbooks.common.errors import RunbookError, spark_errors


def read_log(ckpt, rel: str, line: int) -> tuple[list[str], dict]:
    """A log file's lines and its JSON object on ``line``; damage raises one line naming it."""
    try:  # a ChecksumException (bytes changed), bytes that are not UTF-8 or JSON: ValueErrors
        with spark_errors(f"reading {rel}"):
            lines = ckpt.fs.read_bytes(rel).decode("utf-8").splitlines()
        value = json.loads(lines[line]) if len(lines) > line else None
        ok = isinstance(value, dict) and (not line or lines[0][:1] == "v" and lines[0][1:].isdigit())
        what = "" if ok else "empty (0 bytes)" if not lines else "cut short or not a log entry"
    except ValueError as exc:
        what = str(exc).split(" failed: ", 1)[-1]
    if what:
        raise RunbookError(f"{rel} of checkpoint {ckpt.root} is damaged ({what}): 05 recover "
                           "corrupted state says what Spark does with it and how to repair it")
    return lines, value


def listed_batches(listing: dict, folder: str) -> dict:
    """The entries of one log folder (``offsets`` or ``commits``) in a listing by path relative to
    the checkpoint root, by batch id: its sidecars, temporary files and anything deeper left out."""
    prefix = folder + "/"
    return {int(rel[len(prefix):]): entry for rel, entry in listing.items()
            if rel.startswith(prefix) and rel[len(prefix):].isdigit()}


def json_problem(text: str, where: str, require: str = "", scalars: bool = False
                 ) -> tuple[str, str] | None:
    """(damage, what) when ``text`` is not the JSON expected at ``where``; None when it is."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated")
        if cut and text.lstrip()[:1] in "{[\"" and text.isprintable():
            return "truncated", f"cut short: {where} ends mid-JSON ({exc.msg})"
        return "garbage", f"garbage: {where} is not JSON ({exc.msg} at character {exc.pos})"
    if not scalars and not isinstance(value, dict):
        return "garbage", f"garbage: {where} is not a JSON object"
    if require and require not in value:
        return "garbage", f"garbage: {where} has no {require!r}"
    return None
