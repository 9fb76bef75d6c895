"""The command line, ``state-runbooks`` (also ``python -m state_runbooks``), and running notebooks
as whole processes; the top layer, which nothing in the library imports.

- :mod:`.main`: the commands (``list``, ``run``, ``demo``, ``export``, ``golden``, ...)
- :mod:`.headless`: each runbook run in a child process, its output in a log, one line per run
- :mod:`.runbook_files`: the notebooks, playbooks and schedule files an installation carries
- :mod:`.execution`: one notebook executed with papermill, its summary and HTML report
- :mod:`.golden`: refreshing the outputs nbval compares
- :mod:`.book`, :mod:`.course`: the course book (every demo as a page, an index in learning-path
  order) and its learning path, ``runbooks/course.yaml``
- :mod:`.kernel`, :mod:`.kernel_config`: the Jupyter kernel the runbooks run in, and its installation
- :mod:`.startup`: what a command-line process does first
"""
