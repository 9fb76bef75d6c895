"""Changing a checkpoint so that nothing is lost: refuse an active query, back up, move never
delete, journal, undo byte for byte. Every runbook that changes a checkpoint goes through here; and the diagnosis a change
is decided on (``diagnosis``: does the state load, what is broken), shared by 05 and 13."""
