"""`state-runbooks run` refuses bad parameters in one line and still leaves an error summary, so a
scheduler sees a status; nothing starts (no kernel, no Spark)."""
import json

import pytest

from state_runbooks.cli.main import main


def _refused(capsys, tmp_path, *arguments):
    code = main(["run", "03_inspect_state", "--out", str(tmp_path / "out"), *arguments])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    summary = json.loads((tmp_path / "out" / "03_inspect_state.summary.json").read_text())
    assert code == 1 and summary["status"] == "error" and summary["error"]["step"] == "parameters"
    assert summary["runbook"] == "inspect_state"
    assert summary["error"]["message"] in last
    return summary["error"]["message"]


def test_a_missing_parameters_file(capsys, tmp_path):
    message = _refused(capsys, tmp_path, "-f", str(tmp_path / "missing.yaml"))
    assert message.startswith(f"parameters file {tmp_path / 'missing.yaml'} does not exist")


@pytest.mark.parametrize("text, says", [("checkpoint_path: [unclosed\n", "is not valid YAML at line"),
                                        ("- a\n- b\n", "holds a list, not 'name: value' lines")])
def test_a_malformed_parameters_file(capsys, tmp_path, text, says):
    path = tmp_path / "schedule.yaml"
    path.write_text(text)
    assert says in _refused(capsys, tmp_path, "-f", str(path))


def test_an_unknown_parameter_is_named(capsys, tmp_path):
    message = _refused(capsys, tmp_path, "-p", "checkpoint_path", "/data/x", "-p", "operater_id", "1")
    assert message.startswith("03_inspect_state has no parameter operater_id: its parameters are "
                              "checkpoint_path, spark_master, summary_path, fail_on")


def test_a_value_that_is_not_its_declared_type(capsys, tmp_path):
    message = _refused(capsys, tmp_path, "-p", "checkpoint_path", "/data/x", "-p", "top_keys",
                       "many")
    assert message == "top_keys='many' is not a number: pass e.g. -p top_keys 1"


def test_the_command_line_reads_notebooks_without_the_iri_grammar():
    """A command-line process skips rfc3987-syntax's grammar (seconds of CPU on import) and still
    reads and validates every runbook notebook with nbformat."""
    import subprocess
    import sys
    code = ("import sys\n"
            "from state_runbooks.cli.runbook_files import runbook_notebooks\n"
            "from state_runbooks.dev.startup import skip_unused_iri_grammar\n"
            "skip_unused_iri_grammar()\n"
            "import nbformat\n"
            "for path in runbook_notebooks():\n"
            "    nbformat.validate(nbformat.read(str(path), as_version=4))\n"
            "assert sys.modules['rfc3987_syntax'] is None\n"
            "print(len(runbook_notebooks()))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 9
