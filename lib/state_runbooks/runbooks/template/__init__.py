"""The template runbook (00): the shape every runbook package has, at its smallest. It counts the
rows of every state store of a checkpoint.

One module per concern, as in every runbook package:

- ``__init__.py`` (this file): the face, everything a notebook cell calls, and nothing else;
- :mod:`.count`: the runbook's one step (a runbook has a module per step or concern);
- :mod:`.demo`: the demo the notebook builds with no ``checkpoint_path``, and its known answers;
- :mod:`.report`: what a reader sees: the summary's findings, and ``what_this_showed(result)``,
  the demo's closing bullets computed from the one result the steps produced.

A runbook that changes a checkpoint adds ``checks.py`` (its requirements, from
:mod:`state_runbooks.safety.requirements`) and ``apply.py`` (its Spark call and verification, run
by :func:`state_runbooks.safety.change.apply_change`, which owns the dry run, backup, journal,
live-writer checks and undo); :mod:`state_runbooks.runbooks.repartition_state` is the model.
"""
from .count import RowCounts, count_rows
from .demo import DEMO, expected_rows
from .exercise import try_it
from .report import summarize, what_this_showed

__all__ = [
    "try_it","DEMO", "RowCounts", "count_rows", "expected_rows", "summarize", "what_this_showed"]
