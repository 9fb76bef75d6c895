"""A change made by plain Python functions (the steps a runbook gives the one change procedure,
``safety/change.py``), writing into a checkpoint held in memory: the procedure tested without
Spark."""
from __future__ import annotations

from memory_checkpoints import commit_entry, offsets_entry

from state_runbooks.safety.requirements import Requirement, RequirementList
from state_runbooks.safety.safekeeping import Change

CHANGE = Change("stand-in change", ".stand-in-", "a test", ("apply", "undo"))


class NewBatch:
    """A change that writes a new batch (offsets, state files, commit) and rewrites the query's
    metadata, as Spark's rewriter does; ``verified`` says what its verification finds."""
    change = CHANGE

    def __init__(self, ckpt, verified: bool = True, fails: str | None = None):
        self.ckpt, self.verified, self.fails = ckpt, verified, fails
        self.called = False

    def does(self) -> str:
        return "writes batch 4"

    def journal(self) -> dict:
        return {"action": "write batch 4"}

    def call(self, out, journal):
        self.called = True
        fs = self.ckpt.fs
        fs.write_bytes("offsets/4", offsets_entry(4))
        for p in (0, 1):
            fs.write_bytes(f"state/0/{p}/5.delta", b"rewritten rows")
        fs.write_bytes("state/0/_metadata/metadata", b"v1\n{}", overwrite=True)
        fs.write_bytes("commits/4", commit_entry(4))
        out.lines.append("wrote batch 4")
        return self.fails

    def verify(self, out, inventory):
        return self.verified, ["verified: batch 4" if self.verified else "NOT verified: batch 4"]


def checks_of(ckpt, ok: bool = True) -> RequirementList:
    return RequirementList(requirements=(Requirement("stopped", ok, "the query looks stopped"),),
                           inventory=ckpt.inventory())
