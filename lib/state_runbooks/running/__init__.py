"""What notebook cells and runbook packages import to run a runbook: its common start
(``start``), its parameters (``parameters``), its summary and recorded values (``results``), its
figures (``plots``) and the production checklist runbooks share (``checklist``: 03 on one
checkpoint, 13 on a fleet). The command line that runs whole notebooks is ``state_runbooks.cli``."""
