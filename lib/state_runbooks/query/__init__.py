"""The user's query: its job file loaded (and shipped to Python workers), Spark's own planning of
it (which writes the state schemas it would use and runs Spark's restart checks), its sources
against the ones a checkpoint logged, and a rehearsal of its restart on a scratch copy: what 08
checks a change with, and 10 and 12 build on."""
