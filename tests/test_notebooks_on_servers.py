"""Every runbook where our users run it: over a real Spark Connect server, and on a real standalone
cluster (master and worker processes). Both are started once per test run (conftest.py).

A run elsewhere must say what a classic local run says: the outputs of the cells nbval compares are
checked against the committed (classic) ones, with the same sanitize rules nbval applies, which
blank paths and ids, never figures.
"""
from __future__ import annotations

import configparser
import re

import nbformat
import pytest

from state_runbooks.checkpoint import Checkpoint
from state_runbooks.notebooks import repo_notebooks_dir, resolve_notebook

REPO = repo_notebooks_dir().parent
NOTEBOOKS = [p.stem for p in sorted(repo_notebooks_dir().glob("*.ipynb"))]
CHECK_TAG = "nbval-check-output"


def _sanitizers() -> list[tuple[re.Pattern, str]]:
    config = configparser.ConfigParser()
    config.read(REPO / "tests" / "nbval_sanitize.cfg")
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


def _compared_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif "text/plain" in output.get("data", {}) and output.get("output_type") != "display_data":
            parts.append(output["data"]["text/plain"])
    text = "".join(parts)
    for pattern, replacement in _sanitizers():
        text = pattern.sub(replacement, text)
    return text


def differences_from_golden(executed_path, name: str) -> list[str]:
    """The compared cells whose output differs from the committed notebook's, with both texts."""
    golden = nbformat.read(str(resolve_notebook(name)), as_version=4)
    ran = {c.get("id"): c for c in nbformat.read(str(executed_path), as_version=4).cells}
    out = []
    for cell in golden.cells:
        if cell.cell_type == "code" and CHECK_TAG in cell.metadata.get("tags", []):
            want, got = _compared_text(cell), _compared_text(ran[cell.get("id")])
            if want != got:
                out.append(f"cell {cell.get('id')}:\n--- classic\n{want}\n--- here\n{got}")
    return out


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_runbook_demo_over_spark_connect_says_what_classic_says(name, connect_server,
                                                                      run_notebook):
    result = run_notebook(name, spark_master=connect_server.url)
    assert differences_from_golden(result.notebook, name) == []
    assert result.summary["status"] in ("ok", "warning", "critical")


@pytest.mark.slow
@pytest.mark.notebook
def test_inspect_over_connect_on_a_checkpoint_it_never_wrote_gives_the_reader_figures(
        spark, connect_server, run_notebook, tmp_path):
    """A query none of the demos is: an aggregation on a composite key, written here."""
    from pyspark.sql import functions as F
    path = str(tmp_path / "orders-per-store")
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 30).load()
          .withColumn("store", F.col("value") % 7).withColumn("region", F.col("value") % 3)
          .groupBy("store", "region").agg(F.count("*").alias("n")))
    for _ in range(3):
        (df.writeStream.format("noop").outputMode("update").option("checkpointLocation", path)
         .trigger(availableNow=True).start().awaitTermination())
    result = run_notebook("03_inspect_state", checkpoint_path=path,
                          spark_master=connect_server.url)
    reader = spark.read.format("statestore").load(path)
    per_partition = {r.partition_id: r["count"] for r in reader.groupBy("partition_id").count()
                     .collect()}
    stores = result.summary["stores"]
    assert [s["rows"] for s in stores] == [reader.count()] == [21]
    partitions = Checkpoint(spark, path).operators()[0].num_partitions
    assert stores[0]["rows_per_partition"] == [per_partition.get(p, 0) for p in range(partitions)]


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("name", ["03_inspect_state", "05_recover_corrupted_state"])
def test_runbook_demo_on_a_standalone_cluster_says_what_local_mode_says(name, standalone_cluster,
                                                                         run_notebook):
    result = run_notebook(name, spark_master=standalone_cluster.url)
    assert differences_from_golden(result.notebook, name) == []
