"""A stop Python swallows (the signal's handler ran inside a ``__del__``, as it can inside an
import's weakref callback: "Exception ignored in ...") still ends the command."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a subprocess signals itself

SWALLOWED = """
import os, signal, sys, time
from mlflow_agentic.cli.options import exit_on_user_error


class Trap:
    def __del__(self):
        os.kill(os.getpid(), signal.SIG{name})
        for _ in range(100_000):  # the handler runs here, where its exception is dropped
            pass


def work():
    Trap()
    time.sleep(30)
    print("slept through the stop", flush=True)


exit_on_user_error(work)
"""


def run(name: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", SWALLOWED.format(name=name)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - started


def test_a_ctrl_c_raised_inside_a_finalizer_is_raised_again_outside_it():
    done, seconds = run("INT")
    assert done.returncode == 130, done.stderr
    assert "slept through" not in done.stdout and seconds < 20, seconds
    assert "interrupted" in done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr


def test_a_sigterm_raised_inside_a_finalizer_is_raised_again_outside_it():
    done, seconds = run("TERM")
    assert done.returncode == 143, done.stderr
    assert "slept through" not in done.stdout and seconds < 20, seconds
