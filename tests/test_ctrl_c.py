"""Ctrl-C ends the command within 5 s wherever it waits: on an LLM endpoint that trickles a byte
every 2 s, and on permutation importance's one long prediction (a wide table's shuffled copies).
A sandbox's wait is tested beside its containers (test_sandbox_last_mile's w7)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fakes.openai_server import ScriptedOpenAI

pytestmark = pytest.mark.slow  # each starts the command in its own process

WITHIN = 5.0
"""Seconds from Ctrl-C to the command's exit (the issue's bound)."""


def foreground(command: list[str], cwd: Path, **env: str) -> subprocess.Popen:
    """As a terminal runs it: SIGINT raises KeyboardInterrupt even when the test runner itself
    ignores SIGINT (a background job), which the child would inherit. No ``MLFLOW_*`` variable
    an earlier test (or MLflow's ``set_experiment``) left in this process."""
    fresh = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    return subprocess.Popen(command, cwd=cwd, env={**fresh, "PYTHONPATH": str(ROOT), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def interrupt(proc: subprocess.Popen) -> tuple[float, str]:
    """Ctrl-C, then the seconds until the process ended and what it said on stderr."""
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"still running 60 s after Ctrl-C: {err[-2000:]}")
    return time.monotonic() - sent, err


def test_ctrl_c_ends_a_search_waiting_on_a_trickling_llm(tmp_path, churn_frame):
    data = tmp_path / "churn.csv"
    churn_frame.head(400).to_csv(data, index=False)
    server = ScriptedOpenAI(responder=lambda body: ("trickle", 120))
    try:
        proc = foreground([sys.executable, "-m", "mlflow_agentic", "run", "--data", str(data),
                           "--proposer", "llm", "--llm-base-url", server.base_url,
                           "--llm-model", "scripted", "--trainers", "linear", "--time-budget",
                           "300", "--quiet", "--tracking-uri",
                           f"sqlite:///{tmp_path / 'mlflow.db'}"], tmp_path,
                          OPENAI_API_KEY="k")
        deadline = time.monotonic() + 120
        while not server.requests and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        assert server.requests, "the search never asked the LLM"
        time.sleep(1.0)  # in the middle of the trickle
        seconds, err = interrupt(proc)
    finally:
        server.close()
    assert proc.returncode == 130, err
    assert seconds <= WITHIN, f"{seconds:.1f}s after Ctrl-C"
    assert "interrupted" in err and "Traceback" not in err


IMPORTANCE = """
import sys, time
import mlflow, numpy as np, pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from mlflow_agentic.cli.options import exit_on_user_error
from mlflow_agentic.data import Dataset
from mlflow_agentic.data.split import seal_holdout
from mlflow_agentic.tracking.results.diagnostics import log_diagnostics


class SlowOnCopies(ClassifierMixin, BaseEstimator):
    '''Answers at once for the holdout; on importance's stacked copies it takes minutes, as a
    wide table's one long prediction does (in C, where no signal reaches it).'''

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        if len(X) > 1000:
            print("importance under way", flush=True)
            time.sleep(300)
        return np.full((len(X), 2), 0.5)

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


class Direct:
    @staticmethod
    def call(_what, step, *args):
        return step(*args)


rng = np.random.default_rng(0)
frame = pd.DataFrame(rng.normal(size=(600, 20)), columns=[f"c{i}" for i in range(20)])
frame["y"] = np.where(frame["c0"] > 0, "yes", "no")
train, holdout = seal_holdout(Dataset.from_frame(frame, "y", name="wide"))
model = SlowOnCopies().fit(train.X, train.y)
mlflow.set_tracking_uri(sys.argv[1])


def work():
    with mlflow.start_run():
        log_diagnostics(Direct(), model, train, holdout, "roc_auc")


exit_on_user_error(work)
"""


def test_ctrl_c_ends_the_command_during_permutation_importance(tmp_path):
    (tmp_path / "importance.py").write_text(IMPORTANCE)
    proc = foreground([sys.executable, str(tmp_path / "importance.py"),
                       f"sqlite:///{tmp_path / 'mlflow.db'}"], tmp_path)
    line = proc.stdout.readline()  # blocks until importance predicts its copies
    assert "importance under way" in line, proc.communicate()
    seconds, err = interrupt(proc)
    assert proc.returncode == 130, err
    assert seconds <= WITHIN, f"{seconds:.1f}s after Ctrl-C"
