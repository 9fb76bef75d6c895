"""What notebook cells and runbook packages import to run a runbook: its common start
(``start``), its parameters (``parameters``), its summary and recorded values (``results``) and its
figures (``plots``). The command line that runs whole notebooks is ``state_runbooks.cli``."""
