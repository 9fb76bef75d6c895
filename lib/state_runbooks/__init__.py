"""The library behind the spark-state-runbooks notebooks: one place for each thing a runbook does.

The runtime, in layers from the bottom up; each imports only those below it
(``tests/unit/test_import_layers.py`` checks it):

- ``common``: errors (one line, actionable), formatting, redaction, Spark's names for providers
  and settings, the Java check
- ``session``: the Spark session, classic or Spark Connect; local servers for trying and testing
- ``core``: reading a checkpoint: file systems (``fs``), logs and stores (``checkpoint``), state
  files, operators, the state reader, Spark's loads and what a failed one means, growth; and
  ``spark_internals``, the one module that calls into Spark's JVM (each name it reaches listed and
  checked there: the file to read first on a Spark upgrade)
- ``query``: the user's changed query: its job file, and Spark's planning and restart checks of it
- ``safety``: changing a checkpoint without losing anything: activity guard, backup, journal, undo
- ``demos``: demo checkpoints and event logs written by real queries; faults for demos and tests
- ``running``: what notebook cells and runbooks import: a runbook's start, parameters, summary, plots
- ``runbooks``: one package per notebook, named after it (``inspect_state`` serves
  ``03_inspect_state``); none imports another

The tooling, above the runtime, which imports none of it:

- ``dev``: tools for developing and demonstrating: the JVM class archive of ``make demo`` and
  ``make test``, the command line's quick start, a headless Chromium page for the book's test
- ``book``: the course book (``state-runbooks book``): the learning path, its pages and index
- ``cli``: the ``state-runbooks`` command and notebooks run as whole processes (papermill, the
  Jupyter kernel, golden outputs); the top floor: only the entry point (``__main__``) and the
  tooling import it
"""
# The one version of the package, its notebooks (a wheel carries them) and every summary it writes
# (runbook_version); pyproject.toml reads it from here.
__version__ = "0.1.0"
