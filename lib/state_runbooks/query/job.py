"""The changed query, as the job builds it: import the job's own Python file, call its function
with the session, and take what it returns apart (the streaming DataFrame, the output mode, the
trigger, the sink and its options), without starting anything. The modules beside the job's file
go to Spark's Python workers first, as ``--py-files`` would send them.

The settings the job's code makes on the session (``spark.conf.set`` inside the function) are
recorded and taken back from this session afterwards: the checks and the rehearsal apply them
again where they run, so this notebook's session is left as it was.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, first_line
from state_runbooks.core.spark_internals import as_java, writer_field
from state_runbooks.session.spark_session import conf_value, is_connect, session_conf

DEFAULT_FUNCTION = "build"
DEFAULT_OUTPUT_MODE = "append"  # what Spark uses when the writer names none


@dataclass
class JobQuery:
    """The changed query: its plan and how the job would write it."""
    df: object  # the streaming DataFrame
    output_mode: str  # append, update or complete
    trigger: str | None  # as the job sets it (None: the writer was not returned, or none set)
    sink: str | None  # the sink's format (foreachBatch, kafka, delta, ...)
    options: dict = field(default_factory=dict)  # the writer's options
    job_conf: dict = field(default_factory=dict)  # settings the job's code made on the session
    source_file: str = ""
    function: str = DEFAULT_FUNCTION

    @property
    def checkpoint_location(self) -> str | None:
        return next((v for k, v in self.options.items() if k.lower() == "checkpointlocation"),
                    None)

    def describe(self) -> str:
        conf = ", ".join(f"{k}={v}" for k, v in sorted(self.job_conf.items())) or "none"
        return (f"{os.path.basename(self.source_file)}:{self.function}() -> output mode "
                f"{self.output_mode}, trigger {self.trigger or 'not set'}, sink "
                f"{self.sink or 'not set'}; settings the job's code makes: {conf}")


def _import_file(path: str):
    """Import the job's file as a module of its own (its folder on sys.path meanwhile, so that
    it imports its neighbours as it does in the job)."""
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:10]
    name = f"state_runbooks_job_{os.path.splitext(os.path.basename(path))[0]}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RunbookError(f"query_file {path} is not a Python file: pass the job's .py file")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the job's own code may raise anything
        sys.modules.pop(name, None)
        raise RunbookError(f"importing query_file {path} failed: {type(exc).__name__}: "
                           f"{first_line(exc)}") from None
    finally:
        sys.path.remove(folder)
    # Python workers unpickle the job's functions (applyInPandasWithState, a processor) without
    # this module on their path: send them by value, as the demos do.
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(module)
    return module


_PACKAGE_DEPTH = 6  # sub-packages of the job's folder shipped with it
_MAX_SHIPPED_FILES = 2000


def job_modules(path: str) -> dict[str, str]:
    """The Python modules beside the job's file, as its imports find them: the ``.py`` files of
    its folder and of the packages below it (folders with ``__init__.py``), by archive name."""
    folder = os.path.dirname(os.path.abspath(path))
    found = {}
    for current, dirs, files in os.walk(folder):
        rel = os.path.relpath(current, folder)
        depth = 0 if rel == "." else rel.count(os.sep) + 1
        if depth and not os.path.isfile(os.path.join(current, "__init__.py")):
            dirs[:] = []
            continue
        if depth >= _PACKAGE_DEPTH:
            dirs[:] = []
        dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__"))]
        for name in files:
            if name.endswith(".py"):
                found[os.path.normpath(os.path.join(rel, name))] = os.path.join(current, name)
                if len(found) > _MAX_SHIPPED_FILES:
                    raise RunbookError(f"the folder of query_file {path} holds more than "
                                       f"{_MAX_SHIPPED_FILES} Python modules: put the job's "
                                       "file in a folder of its own (with what it imports)")
    return found


def ship_job_folder(spark, path: str) -> str:
    """Make the job's folder importable on Spark's Python workers, as ``--py-files`` would: its
    modules in one archive (named by its content) added to the session. Returns the archive."""
    import tempfile
    import zipfile
    modules = job_modules(path)
    digest = hashlib.sha1()
    for name in sorted(modules):
        digest.update(name.encode())
        with open(modules[name], "rb") as handle:
            digest.update(handle.read())
    archive = os.path.join(tempfile.gettempdir(),
                           f"state-runbooks-job-{digest.hexdigest()[:16]}.zip")
    if not os.path.exists(archive):
        partial = f"{archive}.{os.getpid()}"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for name, source in sorted(modules.items()):
                out.write(source, name)
        os.replace(partial, archive)
    if archive not in _SHIPPED.setdefault(id(spark), set()):
        if is_connect(spark):
            spark.addArtifacts(archive, pyfile=True)
        else:
            spark.sparkContext.addPyFile(archive)
        _SHIPPED[id(spark)].add(archive)
    return archive


_SHIPPED: dict[int, set] = {}  # per session: the archives it has


def _session_settings(spark) -> dict:
    """Every setting made on the session (``SET`` lists the ones not at their default)."""
    return {row[0]: row[1] for row in spark.sql("SET").collect()}


def _restore(spark, before: dict, after: dict) -> dict:
    """Put the session's settings back as they were; return those the job changed."""
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    for key in changed:
        if key in before:
            spark.conf.set(key, before[key])
        else:
            spark.conf.unset(key)
    return changed


def load_job(spark, query_file: str, query_function: str = DEFAULT_FUNCTION) -> JobQuery:
    """Import ``query_file``, call ``query_function(spark)``, check and take apart what it
    returns. One-line errors for a missing file, a missing function and a wrong return type."""
    path = os.path.expanduser(str(query_file or "").strip())
    if not path:
        raise RunbookError("query_file is empty: pass the job's Python file whose function "
                           f"{query_function or DEFAULT_FUNCTION}(spark) returns the changed query")
    if not os.path.isfile(path):
        raise RunbookError(f"query_file not found: {path} (a Python file on this machine, with a "
                           "function that takes the SparkSession and returns the query)")
    name = str(query_function or DEFAULT_FUNCTION).strip()
    module = _import_file(path)
    function = getattr(module, name, None)
    if not callable(function):
        found = sorted(n for n, v in vars(module).items()
                       if callable(v) and not n.startswith("_") and
                       getattr(v, "__module__", None) == module.__name__)
        raise RunbookError(f"query_file {path} has no function {name!r}: pass query_function, "
                           f"one of: {', '.join(found) or 'none defined there'}")
    # Python functions carry the session's --py-files as they are when the query is built: the
    # job's folder goes first, so that Spark's Python workers import what the job imports.
    ship_job_folder(spark, path)
    before = _session_settings(spark)
    try:
        built = function(spark)
    except Exception as exc:  # noqa: BLE001 - the job's own code may raise anything
        _restore(spark, before, _session_settings(spark))
        raise RunbookError(f"{name}(spark) in {path} raised {type(exc).__name__}: "
                           f"{first_line(exc)}") from None
    job_conf = _restore(spark, before, _session_settings(spark))
    with session_conf(spark, job_conf):  # what it returns may be analysed only with them
        job = _take_apart(built, name, path)
    job.job_conf, job.source_file, job.function = job_conf, path, name
    return job


def _take_apart(built, name: str, path: str) -> JobQuery:
    kind = type(built).__name__
    if kind == "StreamingQuery" or hasattr(built, "awaitTermination"):
        built.stop()  # never let a started query go on writing
        raise RunbookError(f"{name}(spark) in {path} started the query (it was stopped): return "
                           "its DataStreamWriter, before .start() or .toTable()")
    if kind == "DataStreamWriter" and hasattr(built, "_df"):
        df = built._df
        mode, trigger, sink, options = _writer_settings(built)
    elif kind == "DataStreamWriter" and hasattr(built, "_write_stream"):
        # Spark Connect's writer keeps the plan, not the DataFrame: make one from it.
        from pyspark.sql.connect.dataframe import DataFrame
        df = DataFrame(built._write_stream._child, built._session)
        mode, trigger, sink, options = _writer_settings(built)
    elif hasattr(type(built), "isStreaming") and hasattr(type(built), "writeStream"):
        df, mode, trigger, sink, options = built, DEFAULT_OUTPUT_MODE, None, None, {}
    else:
        raise RunbookError(f"{name}(spark) in {path} returned {kind}: return the changed "
                           "streaming DataFrame, or its DataStreamWriter (output mode, trigger "
                           "and options set, not started)")
    if not df.isStreaming:
        raise RunbookError(f"{name}(spark) in {path} returned a batch DataFrame: build it from "
                           "spark.readStream, as the job does")
    return JobQuery(df, mode, trigger, sink, options)


def _writer_settings(writer) -> tuple[str, str | None, str | None, dict]:
    """Output mode, trigger, sink and options of a DataStreamWriter, classic or Connect."""
    proto = getattr(writer, "_write_proto", None)
    if proto is not None:  # Spark Connect: the writer is a protobuf message
        trigger = proto.WhichOneof("trigger")
        return ((proto.output_mode or DEFAULT_OUTPUT_MODE).lower(), trigger,
                proto.format or ("foreachBatch" if proto.HasField("foreach_batch") else None),
                dict(proto.options))
    try:  # the classic writer keeps them in private fields
        mode = str(writer_field(writer, "outputMode").toString()).lower()
        trigger = str(writer_field(writer, "trigger").toString())
        sink = writer_field(writer, "source")
        sink = sink if isinstance(sink, str) else str(sink)
        options = dict(as_java(writer._spark, writer_field(writer, "extraOptions").originalMap()))
    except Exception:  # noqa: BLE001 - another Spark version's writer: the defaults apply
        return DEFAULT_OUTPUT_MODE, None, None, {}
    return mode, trigger, sink, {str(k): str(v) for k, v in options.items()}


def session_value(spark, key: str) -> str | None:
    """A setting's value in this session (None when unset and without default)."""
    if is_connect(spark):
        return conf_value(spark, key)
    try:
        return spark.conf.get(key)
    except Exception:  # noqa: BLE001 - a key Spark does not know, unset
        return None
