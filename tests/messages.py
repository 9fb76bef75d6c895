"""What every refusal must be: one line, short enough to read in a scheduler's status column."""
from __future__ import annotations


def one_line(excinfo) -> str:
    """The message of a raised error, asserted to be one line under 400 characters."""
    message = str(excinfo.value)
    assert "\n" not in message and len(message) < 400, message
    return message
