"""What a command-line process does first, before it reads a notebook."""
from __future__ import annotations

import sys


def skip_unused_iri_grammar() -> None:
    """Spare a command-line process the 2-3 s of CPU that importing jsonschema (through nbformat)
    spends building rfc3987-syntax's parser for the "iri" string format, where that package is
    installed: jsonschema then leaves that one format unchecked, and notebook schemas do not use
    it. Call before nbformat is imported; a process that already imported jsonschema is left as
    it is."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)  # None: Python's own "not importable"
