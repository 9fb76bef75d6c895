"""Helpers for the spark-state-runbooks notebooks: one place for each thing a runbook does.

Modules, from the bottom up:

- ``environment``: Java check (standard library only, also run by ``make setup``)
- ``errors``: ``RunbookError`` (one-line, actionable), ``require`` for parameter checks, and
  reading Spark errors (first line, ``[CLASS] message``, root cause, full text)
- ``formatting``: bytes and UTC times as a reader sees them, one way each
- ``runtime``: Spark version, open-source vs Databricks, provider class names
- ``redaction``: secrets hidden in any Spark configuration a runbook prints
- ``session``: the Spark session: classic (local, standalone, YARN, Kubernetes) or Spark Connect
- ``local_servers``: a local Spark Connect server and standalone cluster (``make connect-server``,
  tests)
- ``file_access``: ``open_fs`` picks the file access for the session's kind:
  ``hadoop_fs`` (Hadoop's FileSystem API in the JVM) or ``connect_fs`` (DataFrame reads on Connect)
- ``checkpoint``: a checkpoint's logs, operators, stores and state files; whether RocksDB writes
  changelogs (the newest state version's files decide)
- ``operators``: what each stateful operator keeps, where, how it expires, how Spark reads it
- ``state_reader``: state rows through Spark's ``statestore`` source; UnsafeRow sizes
- ``state_growth``: rows per unit over the retained batches (02 and 03), exact and as cheap as the
  checkpoint allows (RocksDB's snapshot key counts, the change feed, or state reads)
- ``demo``: deterministic demo checkpoints on ``rate-micro-batch`` (``demo_processor``: the
  transformWithState demo's processor)
- ``results``: ``record`` for tests, the JSON summary, ``fail_on``
- ``runbook``: the common start and end of every notebook
- ``plots``: matplotlib figures
- ``notebooks``: run notebooks with papermill, export HTML; ``headless``: ``state-runbooks run``
  and ``demo`` (each runbook in a child process, a line per runbook, logs under ``out/logs/``)
- ``safekeeping``: changing a checkpoint so that nothing is lost (backup, journal, undo byte for
  byte), shared by every runbook that changes one (05, 07)
- one module per runbook with its own logic:
- ``enable_rocksdb`` (01_enable_rocksdb): provider class for the runtime, pinned confs, side-by-side
  measurement of the providers
- ``sizing`` (02_estimate_state_size), a package: jvm_objects (object sizes, table lengths,
  SizeEstimator's sampling), memory_model (heap and ``memoryUsedBytes`` of a store partition),
  measurement (a checkpoint's units, on inspection's ``StoreReport``), recommendation,
  napkin_estimate, projection (growth), demo_comparison (estimate vs Spark's report), report
  (tables, lines, summary)
- ``inspection`` (03_inspect_state): per-store figures, skew, hot keys, expiry, checklist
- ``join_diagnosis`` (04_diagnose_join_mismatch): why a key did not come out of a stream-stream join
- ``recovery`` (05_recover_corrupted_state), a package: structure, loads, diagnose, plan,
  activity, apply (rollback and undo through ``safekeeping``), report, faults (for demos and tests)
- ``monitoring`` (06_monitor_state), a package: event logs (codecs, applications), a live listener,
  history tables, verdicts
- ``repartition`` (07_repartition_state), a package: checks, forecast, apply (through
  ``safekeeping``), report, demo
"""
__version__ = "0.1.0"
