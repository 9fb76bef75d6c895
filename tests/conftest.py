"""Shared fixtures: one local Spark session and demo checkpoints written by real queries.

Demo checkpoints are built once per test run, whichever of its processes (pytest-xdist runs two)
asks first, and must not be changed by tests; a test that changes files copies one first
(``copy_checkpoint``).
"""
from __future__ import annotations

import contextlib
import os
import shutil

import jvm_class_archive
import pytest
import shared_per_run

from state_runbooks.cli.execution import execute
from state_runbooks.cli.runbook_files import resolve_notebook
from state_runbooks.demos.checkpoints import DemoRun, build_demo_checkpoint
from state_runbooks.session.spark_session import get_spark, progress_dict

UNIT_TIER = os.path.join("tests", "unit")


def _jvm_options(args: list[str]) -> str:
    """The quick JIT, and the class archive unless only the unit tier runs (it starts no JVM)."""
    only_units = args and all(os.path.relpath(a.split("::")[0]).startswith(UNIT_TIER)
                              for a in args)
    options = jvm_class_archive.RUN_OPTIONS
    archive = "" if only_units else jvm_class_archive.archive_option(options)
    return f"{options} {archive}".strip()


# The files that take longest in make test, longest first (as measured on 2 cores): they start
# first, so that the two workers end together; the others follow in their usual order. (pytest-xdist
# would otherwise start the files with the most tests first, whatever their length.)
LONGEST_FIRST = [
    "tests/spark/test_diagnose_join_mismatch.py", "tests/spark/test_estimate_state_size.py",
    "tests/spark/test_recover_corrupted_state.py", "tests/spark/test_inspect_state.py",
    "tests/spark/test_rewrite_state.py", "tests/spark/test_checkpoint_corpus.py",
    "tests/notebooks/test_notebooks_on_servers.py", "notebooks/02_estimate_state_size.ipynb",
    "notebooks/03_inspect_state.ipynb", "notebooks/13_fleet_health.ipynb",
    "tests/spark/test_check_query_change.py", "tests/spark/test_move_checkpoint.py",
    "tests/spark/test_recover_corrupted_state_log_damage.py", "tests/spark/test_repartition_state.py",
    "tests/spark/test_monitor_state.py", "notebooks/06_monitor_state.ipynb",
    "notebooks/09_rewrite_state.ipynb", "tests/notebooks/test_notebooks.py",
    "tests/spark/test_live_query.py", "tests/spark/test_enable_rocksdb.py",
    "tests/spark/test_installed_package.py",
]


def pytest_collection_modifyitems(config, items):
    # nbval runs whole notebooks: mark them slow like the papermill runs.
    for item in items:
        if item.fspath.ext == ".ipynb":
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.notebook)
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    # A catalog's tables go to a folder of the run's own, not spark-warehouse/ in the checkout.
    return get_spark(conf={"spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("warehouse"))})


@pytest.fixture(scope="session")
def demo_factory(spark):
    """``demo(workload, provider="hdfs", batches=4, rows_per_batch=20, partitions=2)`` -> DemoRun,
    built once per test run (shared_per_run.py): the process that asks first builds it. Two
    partitions by default: every per-partition path still runs more than once, and each batch
    and each state read costs a task per partition less."""
    cache = {}

    def demo(workload: str, provider: str = "hdfs", batches: int = 4, rows_per_batch: int = 20,
             partitions: int = 2):
        key = (workload, provider, batches, rows_per_batch, partitions)
        if key not in cache:
            def build(folder) -> dict:
                run = build_demo_checkpoint(spark, workload, str(folder / "checkpoint"), batches,
                                            provider, rows_per_batch, partitions)
                return {**vars(run), "progress": [progress_dict(p) for p in run.progress]}
            record = shared_per_run.shared("demo-" + "-".join(map(str, key)), build)
            cache[key] = DemoRun(**record)
        return cache[key]

    return demo


@pytest.fixture
def copy_checkpoint(tmp_path):
    """Copy a (local) checkpoint to a fresh folder that the test may change."""
    def copy(path: str) -> str:
        target = tmp_path / "checkpoint-copy"
        shutil.copytree(path.removeprefix("file:"), target)
        return str(target)
    return copy


@pytest.fixture
def run_notebook(tmp_path):
    """``run_notebook(name, **parameters)``: execute a notebook with papermill (kernel python3) into
    tmp_path, which pytest keeps after a failure; returns an ExecutedNotebook (records, summary).
    The summary JSON is written to ``tmp_path/<name>.summary.json`` unless summary_path is given."""
    def run(name: str, **parameters):
        return execute(resolve_notebook(name), tmp_path, parameters, html=False)
    return run


# -- real servers, started once per test run from the installed pyspark ----------------------------
# shared_per_run.py lets every worker process of the run use the same ones.
def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the run's main process
        shared_per_run.open_run_folder()
        if "SPARK_SUBMIT_OPTS" not in os.environ:
            os.environ["SPARK_SUBMIT_OPTS"] = _jvm_options(config.args)
        options = os.environ["SPARK_SUBMIT_OPTS"]
        if "PYSPARK_SUBMIT_ARGS" not in os.environ:  # the cluster's executors: the same options
            os.environ["PYSPARK_SUBMIT_ARGS"] = (
                f'--conf "spark.executor.extraJavaOptions={options}" pyspark-shell')
        os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", options)  # its master and worker


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        shared_per_run.stop_all()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A Spark Connect server on a free loopback port (stopped at the end of the run)."""
    from state_runbooks.session.local_servers import start_connect_server

    def start():
        server = start_connect_server(str(tmp_path_factory.mktemp("servers") / "connect.log"))
        return shared_per_run.Running(server.url, [server.process.pid])
    return shared_per_run.shared_server("connect", start)


@pytest.fixture(scope="session")
def connect_spark(connect_server):
    """A Spark Connect session on that server, beside the classic ``spark`` of this process.

    pyspark's functions build Connect columns only while SPARK_CONNECT_MODE_ENABLED is set, so call
    library code for this session inside ``with on_connect():``."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    session = ConnectSession.builder.remote(connect_server.url).getOrCreate()
    yield session
    # Before the server goes: a session left open retries its release calls for minutes at exit.
    session.stop()


@pytest.fixture
def on_connect(connect_spark, monkeypatch):
    """``with on_connect(): ...`` runs library code as in a notebook whose session is Connect."""
    @contextlib.contextmanager
    def connect_mode():
        with monkeypatch.context() as patch:
            patch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
            yield connect_spark

    return connect_mode


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A standalone cluster on loopback: one master and one worker process."""
    from state_runbooks.session.local_servers import start_standalone_cluster

    def start():
        cluster = start_standalone_cluster(str(tmp_path_factory.mktemp("servers") / "cluster.log"))
        return shared_per_run.Running(cluster.url, [cluster.worker.pid, cluster.master.pid])
    return shared_per_run.shared_server("cluster", start)


# -- one small checkpoint per operator shape, shared by the tests of every runbook -----------------
@pytest.fixture(scope="session")
def shape_demo(demo_factory):
    """``shape_demo(workload)`` -> DemoRun: a tiny checkpoint (3 batches of 10 rows, 2 partitions)
    of an operator shape (dedup_within_watermark, join_v3, session_window, pandas_with_state,
    transform_with_state, limit, or any other workload), built once per test run."""
    def demo(workload: str, batches: int = 3):
        return demo_factory(workload, batches=batches, rows_per_batch=10, partitions=2)
    return demo

