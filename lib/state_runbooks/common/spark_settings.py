"""Spark's setting names, each spelled here once: the runbooks read them from a checkpoint's
offsets log, set them on sessions and name them to the reader. A test keeps every other module
from spelling one out (``tests/unit/test_spark_settings.py``).
"""

# -- the state store, pinned in a checkpoint's offsets log -----------------------------------------
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
ENCODING_CONF = "spark.sql.streaming.stateStore.encodingFormat"  # unsaferow (default) or avro
COMPRESSION_CODEC_CONF = "spark.sql.streaming.stateStore.compression.codec"
ROCKSDB_FORMAT_CONF = "spark.sql.streaming.stateStore.rocksdb.formatVersion"
ROW_CHECKSUM_CONF = "spark.sql.streaming.stateStore.rowChecksum.enabled"
CHECKPOINT_FORMAT_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"
SHUFFLE_PARTITIONS_CONF = "spark.sql.shuffle.partitions"  # the state partitions, once pinned
JOIN_FORMAT_CONF = "spark.sql.streaming.join.stateFormatVersion"
AGGREGATION_FORMAT_CONF = "spark.sql.streaming.aggregation.stateFormatVersion"
FLATMAP_FORMAT_CONF = "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion"
WATERMARK_POLICY_CONF = "spark.sql.streaming.multipleWatermarkPolicy"
STRICT_DISTRIBUTION_CONF = "spark.sql.streaming.statefulOperator.useStrictDistribution"
PRUNE_STREAMING_SUBPLAN_CONF = "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan"
# Named sources (Spark 4.2+): every source named with .name(), the offsets log in format 2, a
# restart matching sources by name. Recorded in each offsets entry, and yet a restart needs it on
# in its session too (tests/spark/test_source_evolution.py).
SOURCE_EVOLUTION_CONF = "spark.sql.streaming.queryEvolution.enableSourceEvolution"
OFFSET_LOG_FORMAT_CONF = "spark.sql.streaming.offsetLog.formatVersion"
FILE_CHECKSUM_CONF = "spark.sql.streaming.checkpoint.fileChecksum.enabled"  # format 2 only

# -- the state store, not pinned ------------------------------------------------------------------
MIN_BATCHES_TO_RETAIN_CONF = "spark.sql.streaming.minBatchesToRetain"
MAX_VERSIONS_IN_MEMORY_CONF = "spark.sql.streaming.maxBatchesToRetainInMemory"
BOUNDED_MEMORY_CONF = "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage"
MAX_MEMORY_MB_CONF = "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"
NO_DATA_BATCHES_CONF = "spark.sql.streaming.noDataMicroBatches.enabled"
CHECKPOINT_FILE_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"
# Not a setting: the field metadata Spark puts on a watermarked event-time column.
WATERMARK_DELAY_METADATA = "spark.watermarkDelayMs"

# -- the session and its resources ---------------------------------------------------------------
MASTER_CONF = "spark.master"
DRIVER_MEMORY_CONF = "spark.driver.memory"
DRIVER_JAVA_OPTIONS_CONF = "spark.driver.extraJavaOptions"
EXECUTOR_MEMORY_CONF = "spark.executor.memory"
EXECUTOR_INSTANCES_CONF = "spark.executor.instances"
MEMORY_FRACTION_CONF = "spark.memory.fraction"
UI_ENABLED_CONF = "spark.ui.enabled"
CONSOLE_PROGRESS_CONF = "spark.ui.showConsoleProgress"
SESSION_TIME_ZONE_CONF = "spark.sql.session.timeZone"
REDACTION_REGEX_CONF = "spark.redaction.regex"
OPEN_COST_CONF = "spark.sql.files.openCostInBytes"
MAX_PARTITION_BYTES_CONF = "spark.sql.files.maxPartitionBytes"
PARALLEL_DISCOVERY_CONF = "spark.sql.sources.parallelPartitionDiscovery.threshold"
PARALLEL_DISCOVERY_TASKS_CONF = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
CONNECT_ADDRESS_CONF = "spark.connect.grpc.binding.address"
CONNECT_PORT_CONF = "spark.connect.grpc.binding.port"

# -- the event log -------------------------------------------------------------------------------
EVENT_LOG_ENABLED_CONF = "spark.eventLog.enabled"
EVENT_LOG_DIR_CONF = "spark.eventLog.dir"
EVENT_LOG_ROLLING_CONF = "spark.eventLog.rolling.enabled"
EVENT_LOG_COMPRESS_CONF = "spark.eventLog.compress"
EVENT_LOG_CODEC_CONF = "spark.eventLog.compression.codec"
