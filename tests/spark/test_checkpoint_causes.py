"""Why a checkpoint cannot be opened, named in one line, on real Spark: odd characters in the path
(read through an alias), a folder the user may not read, a file system without its connector."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import textwrap

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_reader import read_state
from state_runbooks.core.store_scan import inspect_stores

# Names Spark's state readers cannot resolve as they are (URL-encoded, then not decoded), and
# non-ASCII that they can.
ODD_NAMES = ["sp ace", "pct%41", "hash#1", "what?", "héllo"]


def _one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def _everything(ckpt: Checkpoint, scan: bool):
    rows = sorted(map(str, read_state(ckpt, 0).collect()))
    reports = inspect_stores(ckpt, top_keys=2) if scan else None  # 03's scan: once is enough
    return ckpt.operators(), ckpt.state_files(), reports, rows


def test_odd_characters_in_the_path_read_like_a_plain_path(spark, shape_demo, tmp_path):
    plain = Checkpoint(spark, shape_demo("dedup").checkpoint_path)
    scanned, expected = _everything(plain, True), _everything(plain, False)
    assert all(op.source == "state-metadata" for op in expected[0])
    for name in ODD_NAMES:
        path = tmp_path / name / "checkpoint"
        shutil.copytree(plain.root.removeprefix("file:"), path)
        ckpt = Checkpoint(spark, str(path))
        assert ckpt.root == f"file:{path}"
        assert _everything(ckpt, name == "sp ace") == (scanned if name == "sp ace" else
                                                       expected), name
        assert ckpt.state_metadata_error is None
        if name.startswith("héllo"):  # non-ASCII letters pass unquoted: no alias needed
            assert ckpt.spark_root == ckpt.root
        else:
            assert ckpt.spark_root != ckpt.root
            assert os.path.realpath(ckpt.spark_root.removeprefix("file:")) == str(path)


def test_odd_characters_over_connect_read_like_a_plain_path(spark, on_connect, shape_demo,
                                                             tmp_path):
    plain = Checkpoint(spark, shape_demo("dedup").checkpoint_path)
    path = tmp_path / "sp ace" / "checkpoint"
    shutil.copytree(plain.root.removeprefix("file:"), path)
    with on_connect() as connect_spark:
        ckpt = Checkpoint(connect_spark, str(path))  # the server is local: the alias serves
        assert ckpt.spark_root != ckpt.root
        assert ckpt.operators() == plain.operators()
        assert sorted(map(str, read_state(ckpt, 0).collect())) == \
            sorted(map(str, read_state(plain, 0).collect()))


_AS_PLAIN_USER = textwrap.dedent("""
    import json, sys
    from state_runbooks.common.errors import RunbookError
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.session.spark_session import get_spark
    spark = get_spark()
    out = {}
    for name, call in [("root", lambda: Checkpoint(spark, sys.argv[1])),
                       ("offsets", lambda: Checkpoint(spark, sys.argv[2]).offset_batch_ids)]:
        try:
            call()
            out[name] = "opened"
        except RunbookError as exc:
            out[name] = str(exc)
    print("RESULT " + json.dumps(out))
""")


def _run_without_override(script: str, *args: str) -> dict:
    """Run ``script`` where permission bits hold: as root, with the capabilities that bypass
    them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) dropped; as anyone else, as it is."""
    command = [sys.executable, "-c", script, *args]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: permission bits are not enforced")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if os.geteuid() == 0 and not lines and "setpriv" in done.stderr:
        pytest.skip(f"cannot drop root's capabilities here: {done.stderr.strip()[:200]}")
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_an_unreadable_folder_is_a_permission_error(shape_demo, tmp_path):
    source = shape_demo("dedup").checkpoint_path.removeprefix("file:")
    locked, inner = tmp_path / "locked", tmp_path / "inner"
    shutil.copytree(source, locked)
    shutil.copytree(source, inner)
    os.chmod(locked, 0)
    os.chmod(inner / "offsets", 0)
    try:
        result = _run_without_override(_AS_PLAIN_USER, str(locked), str(inner))
    finally:
        os.chmod(locked, 0o755)
        os.chmod(inner / "offsets", 0o755)
    user = pwd.getpwuid(os.geteuid()).pw_name
    advice = ("grant it read and execute on the checkpoint folder and everything below "
              "(chmod -R u+rX, an ACL, or the bucket's access policy), or run Spark as a user "
              "who has them")
    assert result == {
        "root": f"permission denied: user '{user}' cannot read file:{locked}: {advice}",
        "offsets": f"permission denied: user '{user}' cannot read file:{inner}/offsets: {advice}"}


def _hadoop_version(spark) -> str:
    return str(spark._jvm.org.apache.hadoop.util.VersionInfo.getVersion())


def test_missing_connectors_name_the_jar(spark):
    v = _hadoop_version(spark)
    expected = {
        "s3a://bucket/checkpoint": (
            "cannot open s3a://bucket/checkpoint: this Spark has no Hadoop file system for "
            "scheme 's3a' (class org.apache.hadoop.fs.s3a.S3AFileSystem not found): add "
            f"hadoop-aws-{v}.jar with the AWS SDK bundle it was built with "
            f"(spark.jars.packages=org.apache.hadoop:hadoop-aws:{v} brings both)"),
        "gs://bucket/checkpoint": (
            "cannot open gs://bucket/checkpoint: this Spark has no Hadoop file system for scheme "
            "'gs' (class org.apache.hadoop.fs.gs.GoogleHadoopFileSystem not found): add Google's "
            "GCS connector, gcs-connector-hadoop3-<version>-shaded.jar "
            "(com.google.cloud.bigdataoss:gcs-connector)"),
        "abfss://c@account.dfs.core.windows.net/checkpoint": (
            "cannot open abfss://c@account.dfs.core.windows.net/checkpoint: this Spark has no "
            "Hadoop file system for scheme 'abfss' (class "
            "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem not found): add "
            f"hadoop-azure-{v}.jar (spark.jars.packages=org.apache.hadoop:hadoop-azure:{v})"),
        "foo://bucket/checkpoint": (
            "cannot open foo://bucket/checkpoint: this Spark has no Hadoop file system for scheme "
            "'foo' (no class for it): add its connector jar to the cluster (spark.jars or "
            "spark.jars.packages)"),
    }
    for path, message in expected.items():
        with pytest.raises(RunbookError) as excinfo:
            Checkpoint(spark, path)
        assert _one_line(excinfo) == message


def test_missing_connectors_over_connect_name_the_jar(on_connect):
    with on_connect() as connect_spark:
        with pytest.raises(RunbookError) as excinfo:
            Checkpoint(connect_spark, "s3a://bucket/checkpoint")
        assert _one_line(excinfo) == (
            "cannot open s3a://bucket/checkpoint: this Spark has no Hadoop file system for scheme "
            "'s3a' (class org.apache.hadoop.fs.s3a.S3AFileSystem not found): add "
            "hadoop-aws-<hadoop version>.jar with the AWS SDK bundle it was built with "
            "(spark.jars.packages=org.apache.hadoop:hadoop-aws:<hadoop version> brings both)")
        with pytest.raises(RunbookError) as excinfo:
            Checkpoint(connect_spark, "foo://bucket/checkpoint")
        assert _one_line(excinfo).startswith(
            "cannot open foo://bucket/checkpoint: this Spark has no Hadoop file system for "
            "scheme 'foo' (no class for it)")
