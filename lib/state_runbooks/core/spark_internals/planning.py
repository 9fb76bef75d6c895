"""Spark's planning of a streaming query as a restart's batch, called the way the query's own
restart calls it: ``IncrementalExecution`` built by reflection (its constructor grows between
releases; later parameters take their defaults), its preparations running Spark's restart checks."""
from __future__ import annotations

from .gateway import java_class, java_session, jvm, new_array, scala_object
from .plans import query_execution

INCREMENTAL_EXECUTION = (
    "org.apache.spark.sql.execution.streaming.runtime.IncrementalExecution",  # 4.1 and later
    "org.apache.spark.sql.execution.streaming.IncrementalExecution",  # 4.0
)
OFFSET_SEQ_METADATA = (
    "org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadata$",
    "org.apache.spark.sql.execution.streaming.OffsetSeqMetadata$",
)
WATERMARK_PROPAGATOR = (
    "org.apache.spark.sql.execution.streaming.runtime.WatermarkPropagator$",
    "org.apache.spark.sql.execution.streaming.WatermarkPropagator$",
)
# The constructor's leading parameters given below; later ones take their defaults.
KNOWN_PARAMETERS = ("org.apache.spark.sql.classic.SparkSession",
                    "org.apache.spark.sql.catalyst.plans.logical.LogicalPlan",
                    "org.apache.spark.sql.streaming.OutputMode", "java.lang.String",
                    "java.util.UUID", "java.util.UUID", "long", "scala.Option",
                    "org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadataBase",
                    "org.apache.spark.sql.execution.streaming.runtime.WatermarkPropagator",
                    "boolean")
_OUTPUT_MODES = {"append": "Append", "update": "Update", "complete": "Complete"}


def plan_restart(spark, df, output_mode: str, state_dir: str, batch_id: int, metadata_json: str,
                 query_id: str) -> None:
    """Plan ``df`` (``output_mode``: append, update, complete) as batch ``batch_id`` of query
    ``query_id`` on ``state_dir``, with the offsets log's metadata ``metadata_json``; raises what
    Spark's checks raise (through reflection: inside an InvocationTargetException), LookupError
    where this Spark has none of the classes."""
    view = jvm(spark)
    session = java_session(spark).cloneSession()  # the job's settings without touching ours
    offsets_meta = scala_object(spark, OFFSET_SEQ_METADATA)
    metadata = offsets_meta.apply(metadata_json)
    offsets_meta.setSessionConf(metadata, session.sessionState().conf())
    mode = _OUTPUT_MODES[output_mode]
    cls = java_class(spark, INCREMENTAL_EXECUTION)
    constructor = cls.getConstructors()[0]
    count = len(constructor.getParameterTypes())
    args = [session, query_execution(df).logical(),
            getattr(view.org.apache.spark.sql.streaming.OutputMode, mode)(), state_dir,
            view.java.util.UUID.fromString(query_id), view.java.util.UUID.randomUUID(), batch_id,
            view.scala.Option.empty(), metadata, scala_object(spark, WATERMARK_PROPAGATOR).noop(),
            True]
    no_args = new_array(spark, "Class", [])
    for k in range(len(KNOWN_PARAMETERS) + 1, count + 1):
        args.append(cls.getMethod(f"$lessinit$greater$default${k}", no_args)
                    .invoke(None, new_array(spark, "Object", [])))
    execution = constructor.newInstance(new_array(spark, "Object", args))
    execution.executedPlan()  # the preparations run Spark's restart checks
