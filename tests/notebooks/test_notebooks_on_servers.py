"""Every runbook where our users run it: over a real Spark Connect server, and on a real standalone
cluster (master and worker processes). Both are started once per test run (conftest.py).

A run elsewhere must say what a classic local run says: the outputs of the cells nbval compares are
checked against the committed (classic) ones (notebook_runs.py). Each of these runs also does its
"Try it yourself" exercise both ways its text says.
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import nbformat
import papermill
import pytest
import tiers
import yaml
from notebook_runs import differences_from_golden, run_exercised, says_what_classic_says

from state_runbooks.cli.runbook_files import repo_notebooks_dir, resolve_notebook
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.runbooks import recover_corrupted_state
from state_runbooks.running.results import Summary
from state_runbooks.session.local_servers import free_port

REPO = repo_notebooks_dir().parent
NOTEBOOKS = [p.stem for p in sorted(repo_notebooks_dir().glob("*.ipynb"))]
# A notebook whose demo does not run over Spark Connect as it runs on a classic session says so,
# and why, in its metadata (state_runbooks.differs_over_connect); each is tested below or in its
# own test file.
CONNECT_DEMOS = [n for n in NOTEBOOKS if not nbformat.read(str(resolve_notebook(n)), 4).metadata
                 .get("state_runbooks", {}).get("differs_over_connect")]
# make test: the template whole over Connect (each runbook's own calls over Connect are in its test
# file); make test-extended: every runbook whole.
CORE_CONNECT_DEMOS = {"00_template"}


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("name", tiers.tiered(CONNECT_DEMOS, CORE_CONNECT_DEMOS))
def test_every_runbook_demo_over_spark_connect_says_what_classic_says(name, connect_server,
                                                                      tmp_path):
    result = run_exercised(name, tmp_path, spark_master=connect_server.url)
    says_what_classic_says(result, name)
    assert result.summary["status"] in ("ok", "warning", "critical")


@pytest.mark.slow
@pytest.mark.notebook
def test_query_change_over_connect_is_unknown_and_stops_a_warning_gate(connect_server,
                                                                       run_notebook, tmp_path):
    """Spark's planning and the copy cannot run from a Spark Connect client: 08's demo changes
    are each ``unknown`` (the one Spark refuses is never called ``restarts``), and a gate with
    fail_on warning stops with the summary saying what was not checked."""
    summary_path = tmp_path / "gate.json"
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("08_check_query_change", spark_master=connect_server.url,
                     fail_on="warning", summary_path=str(summary_path))
    assert excinfo.value.ename == "RunbookFailed"
    summary = json.loads(summary_path.read_text())
    assert (summary["status"], summary["restart"], summary["error_class"]) == (
        "warning", "unknown", None)
    assert [n.split(":")[0] for n in summary["not_checked"]] == [
        "operators and state schemas", "rehearsal"]


@pytest.mark.slow
@pytest.mark.notebook
@tiers.EXTENDED  # make test: the worker's error text is read by a unit test (test_errors)
def test_a_connect_server_whose_workers_lack_pyarrow_runs_the_rest_of_03(run_notebook, tmp_path):
    """A Spark Connect server started with a Python that has neither pandas nor pyarrow (a bare
    virtual environment): 03's demo step on PySpark's stateful APIs says what its workers lack,
    and the rest of the runbook runs."""
    import venv

    from state_runbooks.session.local_servers import start_connect_server
    bare = tmp_path / "bare-python"
    venv.create(bare, with_pip=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYSPARK_PYTHON", str(bare / "bin" / "python"))
        server = start_connect_server(str(tmp_path / "server.log"))
    try:
        result = run_notebook("03_inspect_state", spark_master=server.url)
    finally:
        server.stop()
    assert result.summary["status"] in ("ok", "warning")
    said = "\n".join(o.get("text", "") for c in nbformat.read(str(result.notebook), 4).cells
                     if c.cell_type == "code" for o in c.get("outputs", []))
    assert ("applyInPandasWithState (demo pandas_with_state): not run here: ModuleNotFoundError: "
            "No module named 'pyarrow' on Spark's Python workers") in said


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
@tiers.EXTENDED  # make test reads state on the cluster's executors in 03's test below
def test_recover_demo_on_a_standalone_cluster_says_what_local_mode_says(standalone_cluster,
                                                                        tmp_path):
    """05's demo breaks, diagnoses, rolls back and undoes its checkpoint: the driver moves the
    files while the executors, in their own JVMs, load the state."""
    name = "05_recover_corrupted_state"
    result = run_exercised(name, tmp_path, spark_master=standalone_cluster.url)
    says_what_classic_says(result, name)


@pytest.mark.slow
@pytest.mark.notebook
def test_migrate_demo_on_a_standalone_cluster_says_what_local_mode_says(standalone_cluster,
                                                                        tmp_path):
    """10's demo migrates 08's example job, continues it and migrates in place and back: the
    driver writes the logs and metadata, the cluster's executors read the old rows, encode the
    mapped ones as Spark's bytes in their Python workers and write the state."""
    name = "10_migrate_state"
    result = run_exercised(name, tmp_path, spark_master=standalone_cluster.url)
    says_what_classic_says(result, name)


@pytest.mark.slow
@pytest.mark.notebook
def test_move_demo_on_a_standalone_cluster_says_what_local_mode_says(standalone_cluster,
                                                                     tmp_path):
    """12's demo moves a file source's checkpoint at a new location and in place and back: the
    driver writes the logs and copies the files, the cluster's executors read the moved folder's
    files and load the carried state in the restart on a copy and the continued batch."""
    name = "12_move_checkpoint"
    result = run_exercised(name, tmp_path, spark_master=standalone_cluster.url)
    says_what_classic_says(result, name)


@pytest.mark.slow
@pytest.mark.notebook
@tiers.EXTENDED  # make test runs 03's and 12's on the cluster; the fleet's reads are theirs
def test_fleet_demo_on_a_standalone_cluster_says_what_local_mode_says(standalone_cluster,
                                                                      tmp_path):
    """13's demo examines its dozen checkpoints on the cluster, up to four at once: the driver
    lists and reads the logs, the cluster's executors count every checkpoint's state files in
    one job, load each newest state and count its rows, and every checkpoint gets the status it
    gets in local mode."""
    name = "13_fleet_health"
    result = run_exercised(name, tmp_path, spark_master=standalone_cluster.url)
    says_what_classic_says(result, name)
    assert result.summary["files_counted"] == (
        "one Spark job over the checkpoints' folders")


@pytest.mark.slow
@pytest.mark.notebook
def test_inspect_scheduled_on_a_standalone_cluster_gives_the_local_figures(
        spark, demo_factory, standalone_cluster, run_notebook, tmp_path):
    """03 as a platform team schedules it (the schedule file's parameters, fail_on warning, a
    summary path) on a checkpoint it did not write, its state read by the cluster's executors:
    every store's figures and the checklist (growth included) are those a local session
    computes."""
    from state_runbooks.core import growth as state_growth
    from state_runbooks.runbooks import inspect_state
    checkpoint = demo_factory("two_operators", "rocksdb_changelog").checkpoint_path
    schedule = yaml.safe_load((REPO / "runbooks/schedules/inspect_state.yaml").read_text())
    schedule.update(checkpoint_path=checkpoint, summary_path=str(tmp_path / "summary.json"),
                    spark_master=standalone_cluster.url)
    result = run_notebook("03_inspect_state", **schedule)

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == result.records["summary"]
    assert summary["runbook"] == "inspect_state" and summary["status"] == "ok"
    ckpt = Checkpoint(spark, checkpoint)
    assert summary["checkpoint_path"] == ckpt.root and summary["batch_id"] == 3
    local = inspect_state.inspect_stores(ckpt)
    assert summary["total_rows"] == sum(r.rows for r in local)
    assert summary["stores"] == json.loads(json.dumps([r.summary() for r in local]))
    checklist = inspect_state.production_checklist(
        ckpt, local, state_growth.growth(ckpt, -1, "", schedule["growth_points"], local))
    assert [(i["item"], i["status"]) for i in summary["checklist"]] == [
        (i.details["item"], i.details["status"]) for i in checklist]


def _tree_sha(root: str) -> dict[str, str]:
    import hashlib
    import pathlib
    base = pathlib.Path(root.removeprefix("file:"))
    return {str(f.relative_to(base)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(base.rglob("*")) if f.is_file()}


@pytest.mark.slow
@pytest.mark.notebook
def test_recover_over_connect_diagnoses_and_plans_as_classic_and_changes_nothing(
        spark, demo_factory, copy_checkpoint, connect_server, run_notebook, tmp_path):
    from state_runbooks.demos import faults

    run = demo_factory("two_operators", "rocksdb_changelog", batches=6, rows_per_batch=10,
                       partitions=2)
    broken = copy_checkpoint(run.checkpoint_path)
    broken_file = faults.inject_fault(Checkpoint(spark, broken), "break_middle")
    before = _tree_sha(broken)
    # The classic side in this process (its notebook runs under nbval): the same calls, the same
    # summary.
    ckpt = Checkpoint(spark, broken)
    diag = recover_corrupted_state.diagnose(ckpt)
    summary = Summary("recover_corrupted_state", ckpt.root, spark.version)
    recover_corrupted_state.summarize(summary, recover_corrupted_state.Recovery(
        diag, recover_corrupted_state.plan_rollback(ckpt, diag)))
    classic = summary.to_dict()

    # Applying needs file moves, which Spark Connect cannot make outside Databricks: one line,
    # and the run fails (a scheduler must not read a refused change as done). Its diagnosis and
    # plan are the classic ones.
    with pytest.raises(papermill.PapermillExecutionError) as failed:
        run_notebook("05_recover_corrupted_state", checkpoint_path=broken,
                     spark_master=connect_server.url, mode="rollback", dry_run=False,
                     force=True, summary_path=str(tmp_path / "apply.json"))
    assert failed.value.ename == "RunbookFailed" and "did not happen" in failed.value.evalue
    connect = json.loads((tmp_path / "apply.json").read_text())
    assert connect["status"] == classic["status"] == "critical"
    assert connect["last_good_batch_id"] == classic["last_good_batch_id"]
    assert broken_file in [b["path"] for b in connect["broken"]]
    assert connect["plan"] == classic["plan"] and connect["plan"]["moves"]
    assert not connect["applied"] and connect["change_failed"].startswith("rollback refused")
    messages = [f["message"] for f in connect["findings"] if f["code"] == "rollback_refused"]
    assert len(messages) == 1 and "classic session" in messages[0] and "\n" not in messages[0]
    assert _tree_sha(broken) == before


@pytest.mark.slow
@pytest.mark.notebook
@tiers.EXTENDED  # make test: 05 over Connect on a broken checkpoint, and its refusal (above)
def test_recover_demo_over_connect_says_why_its_checkpoint_stays_intact(connect_server,
                                                                         run_notebook):
    result = run_notebook("05_recover_corrupted_state", spark_master=connect_server.url)
    text = "".join(o.get("text", "") for c in nbformat.read(str(result.notebook), 4).cells
                   for o in c.get("outputs", []))
    assert "this session cannot change files (Spark Connect without dbutils.fs)" in text
    assert result.summary["status"] == "ok"


@pytest.mark.slow
@pytest.mark.notebook
def test_07_demo_over_spark_connect_differs_from_classic_only_where_spark_cannot(
        connect_server, run_notebook):
    """Spark Connect has no offline repartition: the forecast is the classic one, the
    requirements say why not and show the alternatives, and the demo's apply steps do not run."""
    result = run_notebook("07_repartition_state", spark_master=connect_server.url)
    differing = differences_from_golden(result.notebook, "07_repartition_state")
    assert [d.split(":", 1)[0] for d in differing] == [
        "cell cell-07", "cell cell-13", "cell cell-14", "cell cell-15",
        "cell cell-what-this-showed-run"], differing
    assert "NO   the repartition API in this session: this is a Spark Connect session" in \
        differing[0] and "(b) start the query on a new checkpoint" in differing[0]
    assert "demo: this session cannot repartition" in differing[1]
    summary = result.summary
    assert summary["applied"] is False and summary["num_partitions_after"] == 4
    assert [f["code"] for f in summary["findings"]] == ["repartition_not_possible_now"]


def _connect_server_command(tmp_path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    command = subprocess.Popen(
        [sys.executable, "-m", "state_runbooks", "connect-server", "--port", str(port),
         "--log", str(tmp_path / "connect.log")], stdout=subprocess.PIPE, text=True)
    return command, port


def _servers_on(port: int) -> list:
    import psutil
    setting = f"spark.connect.grpc.binding.port={port}"
    return [p for p in psutil.process_iter(["cmdline"]) if setting in (p.info["cmdline"] or [])]


def _no_server_left_on(port: int, seconds: float = 10) -> bool:
    """No process of a server on ``port`` is left (one that was told to end exits within
    seconds)."""
    deadline = time.monotonic() + seconds
    while _servers_on(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.slow
def test_connect_server_command_stops_its_server_when_told_to_end(tmp_path):
    """``state-runbooks connect-server`` runs the server in a session of its own; SIGTERM (a
    scheduler or a closed terminal's SIGHUP) ends the server too, and frees the port."""
    command, port = _connect_server_command(tmp_path)
    try:
        for line in command.stdout:
            if line.startswith("ready:"):
                break
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        command.send_signal(signal.SIGTERM)
        assert command.wait(timeout=60) == 0
    finally:
        command.kill()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert _no_server_left_on(port)


@pytest.mark.slow
def test_connect_server_command_told_to_end_while_starting_stops_the_server_it_started(tmp_path):
    """The signal may come before the server listens, or while "ready" is printed: the server,
    in a session of its own, is stopped all the same."""
    command, port = _connect_server_command(tmp_path)
    try:
        assert command.stdout.readline().startswith("starting")
        while not _servers_on(port):  # its process exists; a JVM listens seconds later
            assert command.poll() is None
            time.sleep(0.1)
        command.send_signal(signal.SIGTERM)
        assert command.wait(timeout=60) == 0
    finally:
        command.kill()
    assert _no_server_left_on(port)
