"""The course book, ``state-runbooks book``: every notebook run on its demo and rendered as a page,
with an index in the order of the learning path. Tooling above the runtime: no runtime module
imports it; it runs the demos with the command line's runner (:mod:`state_runbooks.cli.headless`).

- :mod:`.course`: the learning path, read from ``runbooks/course.yaml``
- :mod:`.links`: where each link of the notebooks and playbooks goes in the book
- :mod:`.pages`: the lesson pages and the index
- :mod:`.playbooks`: the playbooks, the glossary and the schedule files as pages
- :mod:`.build`: the demos run, then every page rendered; the command
"""
