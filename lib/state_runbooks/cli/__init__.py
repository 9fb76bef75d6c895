"""The command line, ``state-runbooks`` (also ``python -m state_runbooks``), and running notebooks
as whole processes; tooling above the runtime, which only the entry point and the course book
(:mod:`state_runbooks.book`, run by ``state-runbooks book``) import.

- :mod:`.main`: the commands (``list``, ``run``, ``demo``, ``export``, ``golden``, ...)
- :mod:`.headless`: each runbook run in a child process, its output in a log, one line per run
- :mod:`.runbook_files`: the notebooks, playbooks and schedule files an installation carries
- :mod:`.execution`: one notebook executed with papermill, its summary and HTML report
- :mod:`.golden`: refreshing the outputs nbval compares
- :mod:`.kernel`, :mod:`.kernel_config`: the Jupyter kernel the runbooks run in, and its installation
- :mod:`.in_order`: runs side by side, their lines in the order of the runbooks
"""
