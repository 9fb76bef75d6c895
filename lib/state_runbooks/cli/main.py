"""The command line, installed as ``state-runbooks`` (also ``python -m state_runbooks``)::

    state-runbooks list                          # the runbooks, each with its purpose
    state-runbooks demo [--out out/] [-j 2]      # every runbook on its demo: .ipynb, .html, .json
    state-runbooks run 03_inspect_state -p checkpoint_path s3a://... --out out/
    state-runbooks run 03_inspect_state -f inspect_state -p checkpoint_path s3a://...  # a schedule
    state-runbooks run 03_inspect_state --demo   # on the demo (a run names its checkpoint otherwise)
    state-runbooks export runbooks/              # the notebooks and playbooks, to import elsewhere
    state-runbooks install-kernel-config         # the kernel: JVM output out of cells, quick exit
    state-runbooks golden [03_inspect_state]     # refresh the outputs nbval compares
    state-runbooks book [--out out/book]         # every demo as a page of the course book
    state-runbooks connect-server [--port 15002] # a local Spark Connect server, until Ctrl-C
"""
from __future__ import annotations

import argparse
import pathlib
import signal
import sys
import threading
from functools import partial

from state_runbooks import __version__
from state_runbooks.book.build import book_command
from state_runbooks.common.errors import RunbookError
from state_runbooks.common.locations import refuse_own_folder
from state_runbooks.dev.startup import skip_unused_iri_grammar

from .golden import refresh_golden
from .headless import ChildRun, demo_starts, report
from .in_order import default_jobs, run_in_order
from .kernel_config import install_kernel_config
from .runbook_files import (
    export_runbooks,
    notebooks_folder,
    playbooks_folder,
    purpose,
    repo_notebooks_dir,
    resolve_notebook,
    resolve_schedule,
    runbook_notebooks,
)


def serve_connect(port: int, log: str) -> int:
    """Start a Spark Connect server from the installed pyspark and keep it up until Ctrl-C, or
    until this process is told to end (SIGTERM, SIGHUP): the server runs in a session of its own,
    so it would otherwise outlive this process and keep the port."""
    from state_runbooks.session.local_servers import start_connect_server

    # The handler only notes the signal: an exception raised from it could come between the
    # server's start and its process being known, and leave the server running.
    ending = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda _signum, _frame: ending.set())
    pathlib.Path(log).parent.mkdir(parents=True, exist_ok=True)
    print(f"starting a Spark Connect server on 127.0.0.1:{port} (log: {log}) ...", flush=True)
    server = None
    try:
        server = start_connect_server(log, port, ending=ending)  # stops it if told to end
        print(f"ready: run a runbook with -p spark_master {server.url}   (Ctrl-C stops it)",
              flush=True)
        while not ending.wait(0.5) and server.process.poll() is None:
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if server is not None:
            server.stop()
    return 0


def _parse_parameters(pairs: list[list[str]]) -> dict:
    """``-p name value`` pairs, values as given: the type each parameter declares decides what a
    value means (``false`` for a bool, ``2024`` for a path), see
    :mod:`state_runbooks.running.parameters`."""
    return dict(pairs)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count: pass 1 or more")
    return int(text)


def list_runbooks() -> str:
    """A line per runbook (its name and purpose, from the notebook), then the schedule files."""
    notebooks = runbook_notebooks()
    width = max((len(p.stem) for p in notebooks), default=0) + 2
    lines = [f"{p.stem:<{width}}{purpose(p)}" for p in notebooks]
    schedules = sorted(p.name.removesuffix(".yaml")
                       for p in (playbooks_folder() / "schedules").glob("*.yaml"))
    lines += ["", f"schedule files (run NAME -f SCHEDULE): {', '.join(schedules)}",
              f"spark-state-runbooks {__version__}, notebooks in {notebooks_folder()}"]
    return "\n".join(lines)


def export(target: pathlib.Path) -> str:
    try:
        written, playbooks = export_runbooks(target)
    except OSError as exc:
        raise SystemExit(f"error: cannot export to {target}: {exc.strerror or exc}: "
                         "name a folder you can write to") from None
    return (f"wrote {len(written)} notebooks to {target / 'notebooks'}/ and the playbooks with their "
            f"schedule files to {playbooks}/ (version {__version__})")


def main(argv: list[str] | None = None) -> int:
    skip_unused_iri_grammar()
    parser = argparse.ArgumentParser(prog="state-runbooks", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="name the runbooks, each with its purpose")
    demo = sub.add_parser("demo", help="run every runbook on its demo checkpoint")
    demo.add_argument("--out", default="out", help="output folder (default: out)")
    demo.add_argument("-j", "--jobs", type=_positive, default=default_jobs(),
                      help=f"runbooks run at a time (default: {default_jobs()}, from the cores)")
    run = sub.add_parser("run", help="run one runbook")
    run.add_argument("notebook", help="notebook name or path, e.g. 03_inspect_state")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                     metavar=("NAME", "VALUE"), help="a parameter, as with papermill -p")
    run.add_argument("-f", "--parameters-file",
                     help="a YAML file of parameters, or the name of a schedule file (see list)")
    run.add_argument("--out", default="out", help="output folder (default: out)")
    run.add_argument("--demo", action="store_true",
                     help="with no checkpoint_path, run on the demo (without: refuse)")
    exporting = sub.add_parser("export", help="write the notebooks and playbooks to a folder, for "
                               "import into Jupyter or a Databricks workspace")
    exporting.add_argument("folder", help="target folder (created; files of the same name replaced)")
    sub.add_parser("install-kernel-config", help="install the kernel configuration: JVM output "
                   "kept out of notebook cells, no wait for the JVM at shutdown")
    golden = sub.add_parser("golden", help="refresh the outputs nbval compares (after a change)")
    golden.add_argument("notebooks", nargs="*", help="notebook names; default: all")
    book = sub.add_parser("book", help="run every demo and render the course book: a page per "
                          "notebook and an index in learning-path order (runbooks/course.yaml)")
    book.add_argument("notebooks", nargs="*", help="notebook names; default: all of the course")
    book.add_argument("--out", default="out/book", help="output folder (default: out/book)")
    book.add_argument("-j", "--jobs", type=_positive, default=default_jobs(),
                      help=f"demos run at a time (default: {default_jobs()}, from the cores)")
    server = sub.add_parser("connect-server", help="run a local Spark Connect server (Ctrl-C stops)")
    server.add_argument("--port", type=int, default=15002, help="port on 127.0.0.1 (default 15002)")
    server.add_argument("--log", default="out/connect-server.log", help="the server's log file")
    args = parser.parse_args(argv)

    if args.command == "connect-server":
        return serve_connect(args.port, args.log)

    if args.command == "list":
        print(list_runbooks())
        return 0
    if args.command == "export":
        print(export(pathlib.Path(args.folder)))
        return 0
    if args.command == "install-kernel-config":
        print(f"installed {install_kernel_config()}")
        return 0
    if args.command == "golden":
        # Golden outputs live in the clone's notebooks, never in an installed copy.
        try:
            clone = repo_notebooks_dir()
        except FileNotFoundError as exc:
            raise SystemExit(f"error: {exc}") from None
        names = args.notebooks or [p.stem for p in sorted(clone.glob("*.ipynb"))]
        for name in names:
            notebook = resolve_notebook(name, clone)
            print(f"{notebook.name}: {refresh_golden(notebook)} compared cells refreshed", flush=True)
        return 0

    out_dir = pathlib.Path(args.out).resolve()  # a relative --out: the folder run from
    try:
        refuse_own_folder(str(out_dir), "--out")
    except RunbookError as exc:
        raise SystemExit(f"error: {exc}") from None
    interactive = sys.stdout.isatty()
    if args.command == "book":
        try:
            return book_command(args.notebooks, out_dir, interactive, args.jobs)
        except RunbookError as exc:
            raise SystemExit(f"error: {exc}") from None
    if args.command == "run":
        # The parameters file is read, and every parameter checked, where a refusal still
        # writes the run's summary (ChildRun).
        starts = [partial(ChildRun, resolve_notebook(args.notebook), out_dir,
                          _parse_parameters(args.parameter), args.demo,
                          resolve_schedule(args.parameters_file or ""), {})]  # JVM as given
        jobs = 1
    else:
        starts, jobs = demo_starts(runbook_notebooks(), out_dir), args.jobs
    outcomes = run_in_order(starts, jobs, interactive)
    print(report(outcomes, out_dir))
    return 1 if any(o.failure for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
