"""Redact secrets before any Spark configuration is printed, recorded or written to a summary.

A runbook prints configuration (the confs it sets, the confs pinned in a checkpoint's offsets log,
copy-paste snippets), and its output ends up in notebooks, HTML reports and scheduler logs. Every
such print goes through :func:`redact_conf`:

- a key that names a secret (``secret``, ``password``, ``passwd``, ``token``, ``credential``,
  ``private``, ``signature``, ``sas``) is redacted whatever its value;
- a key that contains ``key`` (``fs.s3a.access.key``, ``fs.azure.account.key.<account>``) is
  redacted when its value looks like a credential: a long run of letters, digits and ``+/=_-``
  with both letters and digits. Ordinary values stay readable
  (``spark.sql.mapKeyDedupPolicy=EXCEPTION``);
- in any value, the password of a URI (``scheme://user:password@host``) and ``password=`` /
  ``token=`` style parameters are redacted.

Spark's own ``spark.redaction.regex`` can be passed as ``extra_key_pattern`` to redact more keys.
"""
from __future__ import annotations

import re

from .spark_settings import REDACTION_REGEX_CONF

REDACTED = "*********(redacted)"

SECRET_KEY = re.compile(r"secret|passw(or)?d|token|credential|private|signature"
                        r"|(^|[._-])sas([._-]|$)", re.IGNORECASE)
KEY_WORD = re.compile(r"key", re.IGNORECASE)
# A credential-looking value: 16+ characters of a key alphabet, with letters and digits both.
CREDENTIAL_VALUE = re.compile(r"^[A-Za-z0-9+/=_\-]{16,}$")
URI_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]+:)"
                          r"(?P<secret>[^@\s/]+)(?=@)")
PARAM_SECRET = re.compile(r"(?P<head>(?:password|passwd|pwd|token|secret|sig|accesskey|apikey)=)"
                          r"(?P<secret>[^&;\s]+)", re.IGNORECASE)


def looks_like_credential(value: str) -> bool:
    """Whether a value looks like a key or token rather than a setting (a word, number, class)."""
    value = str(value).strip()
    return (bool(CREDENTIAL_VALUE.match(value)) and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value))


def is_secret(key: str, value: str, extra_key_pattern: str | None = None) -> bool:
    """Whether the whole value of ``key`` must be hidden."""
    if SECRET_KEY.search(key):
        return True
    if extra_key_pattern and re.search(extra_key_pattern, key):
        return True
    return bool(KEY_WORD.search(key)) and looks_like_credential(value)


def redact_value(value: str) -> str:
    """Hide passwords embedded in a value (URIs with user:password@, password=... parameters)."""
    text = URI_PASSWORD.sub(lambda m: m.group("head") + REDACTED, str(value))
    return PARAM_SECRET.sub(lambda m: m.group("head") + REDACTED, text)


def redact_conf(conf: dict, extra_key_pattern: str | None = None) -> dict:
    """A copy of ``conf`` (key -> value) safe to print: secrets replaced by ``REDACTED``."""
    out = {}
    for key, value in conf.items():
        text = "" if value is None else str(value)
        out[key] = REDACTED if is_secret(str(key), text, extra_key_pattern) else redact_value(text)
    return out


def spark_redaction_pattern(spark) -> str | None:
    """The session's ``spark.redaction.regex`` (Spark's own list of secret-looking keys), if set.

    Read through the SQL conf, which carries every setting the application started with, so it
    works the same on a classic session and on Spark Connect (no SparkContext there)."""
    try:
        return spark.conf.get(REDACTION_REGEX_CONF, None)
    except Exception:  # noqa: BLE001 - some runtimes refuse to show non-SQL settings
        return None


def conf_lines(conf: dict, extra_key_pattern: str | None = None,
               separator: str = " = ") -> list[str]:
    """``key = value`` lines, sorted by key, secrets redacted."""
    safe = redact_conf(conf, extra_key_pattern)
    return [f"{key}{separator}{safe[key]}" for key in sorted(safe)]
