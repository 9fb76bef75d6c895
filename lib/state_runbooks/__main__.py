"""``python -m state_runbooks``: the ``state-runbooks`` command line."""
import sys

from state_runbooks.cli.main import main

sys.exit(main())
