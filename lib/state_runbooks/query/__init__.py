"""The user's changed query: its job file loaded (and shipped to Python workers), and Spark's own
planning of it, which writes the state schemas it would use and runs Spark's restart checks."""
