"""How much state each provider holds before it becomes a risk: every size limit the runbooks
judge by, each with why, in one place. 02 plans by them, 03's checklist and 06's verdicts warn by
them, and the playbooks quote them from the runbooks' outputs.

The HDFS-backed provider keeps every state row as Java objects on the executor heap (and, until
they are cleaned up, the versions a batch may still need); RocksDB keeps rows in native memory and
local files. The three HDFS limits below look at that heap three ways, from what each runbook
can see:

- 03 counts rows (its scan reads them all; no memory model): ``HDFS_STATE_ROWS``;
- 02 estimates heap bytes per partition with its memory model: ``HDFS_HEAP_PER_PARTITION``;
- 06 reads Spark's own ``memoryUsedBytes`` per executor: ``STATE_HEAP_SHARE`` of the heap Spark
  leaves to user objects.
"""

# Above this many rows in all, the HDFS-backed provider's heap becomes a risk: at the few hundred
# bytes of JVM objects a small row costs (02's demo measures it), a million rows are a few hundred
# MB of heap, before the versions kept for the next batches.
HDFS_STATE_ROWS = 1_000_000

# The heap one partition's state may take on the HDFS-backed provider: a task loads one
# partition's store at a time per core, and an executor of a few GB with 2-4 cores has about
# this much to spare per core once Spark's own pools are served.
HDFS_HEAP_PER_PARTITION = 256 * 1024 ** 2

# The row bytes one partition may keep in RocksDB's files before a partition's compactions and
# snapshots (a whole store is uploaded when changelog checkpointing is off) take long enough to
# slow batches down: more partitions spread it.
ROCKSDB_PAYLOAD_PER_PARTITION = 1024 ** 3

# Spark's reserved system memory, outside every memory pool (Spark's UnifiedMemoryManager).
RESERVED_HEAP_BYTES = 300 * 1024 ** 2

# The share of the heap above the reserved memory that Spark leaves to user objects, the HDFS-
# backed provider's state among them: 1 - spark.memory.fraction (0.6 by default).
STATE_HEAP_SHARE = 0.4

# RocksDB's native memory per store instance by default (Spark 4's RocksDBConf, RocksDB's own
# defaults for the -1 values): a block cache of 8 MB and two write buffers of 64 MB; it is not
# capped unless bounded memory is set.
ROCKSDB_BLOCK_CACHE_MB = 8
ROCKSDB_WRITE_BUFFER_MB = 64
ROCKSDB_MAX_WRITE_BUFFERS = 2
