"""Running a runbook: its start and summary, plots, papermill runs, the command line."""
