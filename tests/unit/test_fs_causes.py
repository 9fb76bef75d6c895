"""The pure rules behind the one-line causes: characters Java's URI quotes, connector hints."""
from __future__ import annotations

from state_runbooks.core.fs.aliases import _path_part
from state_runbooks.core.fs.causes import (
    describe_char,
    is_permission_error,
    missing_connector,
    permission_message,
    quoted_characters,
    scheme_of,
    unreadable_path_message,
)


def test_quoted_characters_are_those_java_uri_quotes_in_a_path():
    assert quoted_characters("/a/b_c-d.e~f'g(h)*i,j;k:l$m&n+o=p@q/héllo") == []
    assert quoted_characters("/sp ace/pct%41/h#x/q?/[1]{a}\\\"<>^`|") == list(" %#?[]{}\\\"<>^`|")
    assert quoted_characters("/a\u00a0b\u0007c") == ["\u00a0", "\u0007"]  # NBSP, control


def test_paths_and_schemes():
    assert scheme_of("s3a://b/x") == "s3a" and scheme_of("/x") is None
    assert scheme_of("C:\\x") is None and scheme_of("FILE:/x") == "file"
    assert _path_part("file:/tmp/sp ace") == "/tmp/sp ace"
    assert _path_part("file:///tmp/x") == "/tmp/x"
    assert _path_part("s3a://bucket/a b") == "/a b"


def test_missing_connector_reads_each_way_hadoop_says_it():
    cnf = "java.lang.RuntimeException: java.lang.ClassNotFoundException: Class " \
          "org.apache.hadoop.fs.s3a.S3AFileSystem not found"
    assert missing_connector("s3a://b/x", cnf, "3.5.0").startswith(
        "cannot open s3a://b/x: this Spark has no Hadoop file system for scheme 's3a' (class "
        "org.apache.hadoop.fs.s3a.S3AFileSystem not found): add hadoop-aws-3.5.0.jar")
    unsupported = 'org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for ' \
                  'scheme "oss"'
    assert "hadoop-aliyun-3.5.0.jar" in missing_connector("oss://b/x", unsupported, "3.5.0")
    assert "gcs-connector" in missing_connector("gs://b/x", "No FileSystem for scheme: gs")
    for scheme in ("abfs", "abfss", "wasb", "wasbs"):
        assert "hadoop-azure-3.5.0.jar" in missing_connector(
            f"{scheme}://c@a/x", f'No FileSystem for scheme "{scheme}"', "3.5.0")
    assert "hadoop-azure-datalake" in missing_connector("adl://a/x", "No FileSystem for scheme "
                                                        '"adl"')
    assert "only on Databricks" in missing_connector("dbfs:/x", 'No FileSystem for scheme "dbfs"')
    assert missing_connector("s3a://b/x", "java.io.IOException: something else") is None
    assert missing_connector("/x", "ClassNotFoundException: Class com.acme.Udf not found") is None


def test_permission_and_odd_path_messages_are_one_line():
    assert is_permission_error("java.nio.file.AccessDeniedException: /x: Permission denied")
    assert is_permission_error("org.apache.hadoop.security.AccessControlException: Permission "
                               "denied: user=bob, access=READ_EXECUTE")
    assert not is_permission_error("java.io.FileNotFoundException: /x")
    assert permission_message("file:/x", "bob", "bob").startswith(
        "permission denied: user 'bob' cannot read file:/x: ")
    assert "user 'svc' (Hadoop's current user; the JVM runs as 'bob')" in \
        permission_message("file:/x", "svc", "bob")
    assert "the Spark Connect server" in permission_message("file:/x", None)
    assert describe_char(" ") == "' ' (a space)" and describe_char("#") == "'#'"
    assert describe_char("\u00a0") == "U+00A0"
    message = unreadable_path_message("hdfs://nn/a b", [" "])
    assert "\n" not in message and "copy or symlink the checkpoint" in message
