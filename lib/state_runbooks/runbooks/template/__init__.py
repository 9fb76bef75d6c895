"""The template runbook (00): the shape every runbook package has, at its smallest. It counts the
rows of every state store of a checkpoint.

One module per concern, as in every runbook package:

- ``__init__.py`` (this file): the face, everything a notebook cell calls, and nothing else;
- :mod:`.count`: the runbook's one step (a runbook has a module per step or concern);
- :mod:`.demo`: ``DEMO``, the demo the notebook builds with no ``checkpoint_path``, and
  ``run_demo``: every step only the demo runs, in one call that returns one result;
- :mod:`.report`: what a reader sees: ``summarize(summary, result)``, the summary's findings from
  the steps' one result, and ``what_this_showed(demo)``, the demo's closing bullets from its one;
- :mod:`.exercise`: ``try_it``, the "Try it yourself" question and its answer computed.

A runbook that changes a checkpoint adds ``checks.py`` (its requirements, from
:mod:`state_runbooks.safety.requirements`) and ``apply.py`` (its Spark call and verification, run
by :func:`state_runbooks.safety.change.apply_change`, which owns the dry run, backup, journal,
live-writer checks and undo); :mod:`state_runbooks.runbooks.repartition_state` is the model.
"""
from .count import RowCounts, count_rows
from .demo import DEMO, DemoResult, expected_rows, run_demo
from .exercise import try_it
from .report import summarize, what_this_showed

__all__ = ["DEMO", "DemoResult", "RowCounts", "count_rows", "expected_rows", "run_demo",
           "summarize", "try_it", "what_this_showed"]
