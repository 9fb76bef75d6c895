"""Reading a checkpoint, on any file system Spark reaches: logs, operators, stores, state rows,
Spark's loads of the state, growth. Nothing here changes a checkpoint."""
