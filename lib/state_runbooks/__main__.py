"""``python -m state_runbooks``: the ``state-runbooks`` command line."""
import sys

from state_runbooks.running.cli import main

sys.exit(main())
