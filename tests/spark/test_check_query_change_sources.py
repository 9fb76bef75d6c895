"""08 check query change, the sources: each change of a source that PySpark runs here (file,
rate, rate-micro-batch), judged by 08 and then restarted for real on a full copy of the
checkpoint (its last batch committed, as in production), so that Spark shows what it does.
Also the job's own folder on Spark's Python workers, and a module they lack named in one line.
"""
from __future__ import annotations

import json
import shutil
import textwrap

import pytest
import tiers

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import tree_checksums
from state_runbooks.runbooks import check_query_change as qc

JOB = """
from pyspark.sql import functions as F

def _files(spark, folder):
    return spark.readStream.schema("user string, n long").json(folder)

def _rate(spark):
    return (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
            .select(F.concat(F.lit("u"), (F.col("value") % 3).cast("string")).alias("user"),
                    F.col("value").alias("n")))

def _rate_micro_batch(spark):
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
            .select(F.concat(F.lit("u"), (F.col("value") % 3).cast("string")).alias("user"),
                    F.col("value").alias("n")))

def _count(df):
    return df.groupBy("user").count().writeStream.outputMode("update")

def files(spark):
    return _count(_files(spark, INPUT))

def other_folder(spark):
    return _count(_files(spark, OTHER))

def parent_folder(spark):
    return _count(_files(spark, PARENT))

def to_rate(spark):
    return _count(_rate(spark))

def two_sources(spark):
    return _count(_files(spark, INPUT).unionByName(_rate_micro_batch(spark)))

def rate(spark):
    return _count(_rate(spark))

def rate_micro_batch(spark):
    return _count(_rate_micro_batch(spark))
"""


@pytest.fixture(scope="module")
def workspace(spark, tmp_path_factory):
    """A file source's checkpoint (two batches over two folders of JSON files), one of each rate
    source, and the job file whose functions change them."""
    root = tmp_path_factory.mktemp("sources")
    (root / "data" / "in").mkdir(parents=True)
    (root / "data" / "other").mkdir(parents=True)
    for folder in ("in", "other"):
        for i in range(2):
            rows = [json.dumps({"user": f"u{j % 3}", "n": j}) for j in range(4)]
            (root / "data" / folder / f"part-{i}.json").write_text("\n".join(rows) + "\n")
    job = root / "job.py"
    job.write_text(f"INPUT = {str(root / 'data' / 'in')!r}\nOTHER = "
                   f"{str(root / 'data' / 'other')!r}\nPARENT = {str(root / 'data')!r}\n" + JOB)
    checkpoints = {}
    for name, batches in (("files", 1), ("rate_micro_batch", 2), ("rate", 1)):
        df = qc.load_job(spark, str(job), name).df
        checkpoints[name] = str(root / "checkpoints" / name)
        for _ in range(batches):
            (df.writeStream.format("noop").outputMode("update")
             .option("checkpointLocation", checkpoints[name]).trigger(availableNow=True)
             .start().awaitTermination())
    return {"job": str(job), "checkpoints": checkpoints, "root": root}


def _restart_for_real(spark, workspace, checkpoint: str, function: str) -> str | None:
    """The changed query started on a full copy of the checkpoint: None when a batch ran, else
    the first line of what Spark raised."""
    copy = workspace["root"] / "restarts" / f"{function}-{checkpoint.rsplit('/', 1)[-1]}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(checkpoint, copy)
    df = qc.load_job(spark, workspace["job"], function).df
    try:
        query = (df.writeStream.format("noop").outputMode("update")
                 .option("checkpointLocation", str(copy)).trigger(availableNow=True).start())
        query.awaitTermination(120)
        return None
    except Exception as exc:  # noqa: BLE001 - what Spark raised is the answer
        return str(exc)


CASES = [  # checkpoint, changed function, 08's source row, what Spark says on restart
    tiers.case("files", "to_rate", "fails", "For input string", core=True,
               id="file-to-rate"),
    tiers.case("files", "other_folder", "fails", "Wrong basePath", core=True,
               id="file-folder-changed"),
    tiers.case("files", "two_sources", "fails", "sources in the checkpoint offsets", core=True,
               id="sources-count-changed"),
    tiers.case("files", "parent_folder", "changes", None, core=False,
               id="file-folder-containing-the-old-one"),
    tiers.case("rate_micro_batch", "rate", "fails", "", core=False,
               id="rate-micro-batch-to-rate"),
    tiers.case("rate", "rate_micro_batch", "fails", "", core=False,
               id="rate-to-rate-micro-batch"),
]


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint,function,row,spark_says", CASES)
def test_a_source_change_is_judged_as_a_restart_on_a_copy_shows(spark, workspace, checkpoint,
                                                                function, row, spark_says):
    path = workspace["checkpoints"][checkpoint]
    ckpt = Checkpoint(spark, path)
    before = tree_checksums(spark, ckpt.root)
    check = qc.check_query_change(spark, ckpt, qc.load_job(spark, workspace["job"], function))
    assert tree_checksums(spark, ckpt.root) == before
    sources = [r for r in check.comparison.rows if r.aspect.startswith("source")]
    assert [r.verdict for r in sources] == [row], qc.side_by_side_lines(check)
    restarted = _restart_for_real(spark, workspace, path, function)
    if row == "fails":
        assert (check.restart, check.status) == ("fails", "critical")
        assert restarted is not None and spark_says in restarted
        assert check.rehearsal.ran is False  # the rehearsal met the same refusal
    else:
        assert restarted is None, restarted
        assert (check.restart, check.status) == ("restarts", "warning")


# -- the job's folder on Spark's Python workers -------------------------------------------------
HELPER = """
import pandas as pd

def count_events(key, frames, state):
    count = state.get[0] if state.exists else 0
    for frame in frames:
        count += len(frame)
    state.update((count,))
    yield pd.DataFrame({"user_id": [key[0]], "events": [count]})
"""
PANDAS_JOB = """
from pyspark.sql.streaming.state import GroupStateTimeout
from state_runbooks.demos.checkpoints import _events
import counting

def build(spark):
    return (_events(spark, 10).select("user_id").groupBy("user_id")
            .applyInPandasWithState(counting.count_events, "user_id string, events long",
                                    "events long", "update", GroupStateTimeout.NoTimeout)
            .writeStream.outputMode("update"))

def missing_module(spark):
    def needs_a_module(key, frames, state):
        import a_module_no_worker_has  # noqa: F401
        yield from counting.count_events(key, frames, state)
    return (_events(spark, 10).select("user_id").groupBy("user_id")
            .applyInPandasWithState(needs_a_module, "user_id string, events long",
                                    "events long", "update", GroupStateTimeout.NoTimeout)
            .writeStream.outputMode("update"))
"""


@pytest.mark.slow
def test_a_job_whose_functions_live_beside_it_is_rehearsed_and_a_missing_module_named(
        spark, tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "counting.py").write_text(textwrap.dedent(HELPER))
    (folder / "pandas_job.py").write_text(textwrap.dedent(PANDAS_JOB))
    job = str(folder / "pandas_job.py")
    path = str(tmp_path / "checkpoint")
    df = qc.load_job(spark, job, "build").df  # its folder goes with it, as with --py-files
    for _ in range(2):
        (df.writeStream.format("noop").outputMode("update").option("checkpointLocation", path)
         .trigger(availableNow=True).start().awaitTermination())
    ckpt = Checkpoint(spark, path)
    same = qc.check_query_change(spark, ckpt, qc.load_job(spark, job, "build"))
    assert (same.restart, same.rehearsal.ran) == ("restarts", True), qc.rehearsal_lines(same)
    missing = qc.check_query_change(spark, ckpt, qc.load_job(spark, job, "missing_module"))
    assert (missing.restart, missing.status) == ("fails", "critical")
    assert "No module named 'a_module_no_worker_has' on Spark's Python workers" in \
        missing.verdict.message
    assert "\n" not in qc.verdict_line(missing)
