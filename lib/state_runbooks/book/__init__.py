"""The course book, ``state-runbooks book``: every notebook run on its demo and rendered as a page,
with an index in the order of the learning path. Tooling above the runtime: no runtime module
imports it; it runs the demos with the command line's runner (:mod:`state_runbooks.cli.headless`).

- :mod:`.course`: the learning path, read from ``runbooks/course.yaml``
- :mod:`.pages`: the demos run, each page and the index rendered, the command
"""
