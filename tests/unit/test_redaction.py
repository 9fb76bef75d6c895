"""Redaction of secrets in any Spark configuration a runbook prints."""
from __future__ import annotations

import pytest

from state_runbooks.common.redaction import (
    REDACTED,
    conf_lines,
    is_secret,
    looks_like_credential,
    redact_conf,
    redact_value,
)

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example values


AWS_ACCESS = "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize("key", [
    "spark.hadoop.fs.s3a.secret.key", "spark.hadoop.fs.azure.account.oauth2.client.secret",
    "spark.ssl.keyStorePassword", "spark.hadoop.javax.jdo.option.ConnectionPassword",
    "spark.databricks.token", "spark.hadoop.fs.gs.auth.service.account.private.key",
    "spark.hadoop.fs.azure.sas.mycontainer.myaccount.blob.core.windows.net",
    "spark.hadoop.fs.s3a.session.token", "spark.hadoop.google.cloud.auth.credentials"])
def test_secret_keys_are_redacted_whatever_the_value(key):
    assert redact_conf({key: "x"})[key] == REDACTED
    assert redact_conf({key: "false"})[key] == REDACTED


@pytest.mark.parametrize("key,value", [
    ("spark.hadoop.fs.s3a.access.key", AWS_ACCESS),
    ("spark.hadoop.fs.azure.account.key.myaccount.dfs.core.windows.net",
     "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A="),
    ("spark.some.api.key", "a1b2c3d4e5f6a7b8c9d0")])
def test_key_settings_with_credential_values_are_redacted(key, value):
    assert redact_conf({key: value})[key] == REDACTED


@pytest.mark.parametrize("key,value", [
    ("spark.sql.mapKeyDedupPolicy", "EXCEPTION"),
    ("spark.sql.streaming.stateStore.providerClass",
     "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"),
    ("spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB", "512"),
    ("spark.hadoop.fs.s3a.server-side-encryption.key.enabled", "true"),
    ("spark.sql.shuffle.partitions", "200")])
def test_ordinary_settings_stay_readable(key, value):
    assert redact_conf({key: value})[key] == value
    assert not is_secret(key, value)


def test_passwords_inside_values_are_redacted():
    uri = "jdbc:postgresql://user:hunter2@db.example.com:5432/app"
    assert "hunter2" not in redact_value(uri) and "user:" in redact_value(uri)
    assert redact_value("s3a://bucket/path") == "s3a://bucket/path"
    url = "https://host/api?user=a&password=hunter2&x=1"
    assert redact_value(url) == f"https://host/api?user=a&password={REDACTED}&x=1"
    conf = redact_conf({"spark.sql.catalog.pg.url": uri})
    assert "hunter2" not in conf["spark.sql.catalog.pg.url"]


def test_credential_heuristic():
    assert looks_like_credential(AWS_SECRET) and looks_like_credential(AWS_ACCESS)
    for value in ("EXCEPTION", "true", "1234567890123456789", "org.apache.spark.Foo",
                  "a b c d e f g h i"):
        assert not looks_like_credential(value), value


def test_extra_pattern_and_lines():
    conf = {"spark.my.internal.thing": "visible", "spark.sql.shuffle.partitions": "4",
            "spark.hadoop.fs.s3a.secret.key": AWS_SECRET}
    lines = conf_lines(conf, extra_key_pattern=r"internal")
    assert lines == ["spark.hadoop.fs.s3a.secret.key = " + REDACTED,
                     "spark.my.internal.thing = " + REDACTED,
                     "spark.sql.shuffle.partitions = 4"]
    assert AWS_SECRET not in "\n".join(conf_lines(conf))
