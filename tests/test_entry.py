"""The console script exits with the command's code once the interpreter's exit steps have
run, without tearing the interpreter down (seconds a time budget counted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import atexit, sys

class Teardown:
    def __del__(self):
        print("torn down", flush=True)

kept = Teardown()  # freed only when the interpreter tears itself down
import mlflow_agentic.cli

command = mlflow_agentic.cli.main

def main(**options):  # a handler registered by the command's work, as MLflow's and loky's are
    atexit.register(lambda: print("exit handler ran", flush=True))
    return command(**options)

mlflow_agentic.cli.main = main
sys.argv = ["mlflow-agentic", *{argv!r}]
from mlflow_agentic.cli.entry import entry
entry()
"""


def run_entry(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(argv=list(argv))],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # a subprocess
def test_the_command_ends_with_its_code_after_the_exit_handlers_without_the_teardown():
    done = run_entry("--version")
    assert done.returncode == 0, done.stderr
    assert "mlflow-agentic, version" in done.stdout
    assert "exit handler ran" in done.stdout  # what must happen at exit still does
    assert "torn down" not in done.stdout  # the teardown is what is skipped


@pytest.mark.slow  # a subprocess
def test_a_user_error_keeps_its_message_and_exit_code(tmp_path):
    done = run_entry("run", "--data", str(tmp_path / "missing.csv"))
    assert done.returncode == 2
    assert "missing.csv" in done.stderr and "exit handler ran" in done.stdout


def test_the_installed_command_and_python_m_come_through_the_quick_exit():
    root = Path(__file__).resolve().parents[1]
    pyproject = (root / "pyproject.toml").read_text()
    assert 'mlflow-agentic = "mlflow_agentic.cli.entry:entry"' in pyproject
    assert "entry()" in (root / "mlflow_agentic" / "__main__.py").read_text()

