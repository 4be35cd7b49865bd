"""The registered model, served by `mlflow models serve`, answers like the in-process model."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served_challenger(tracked_search, tmp_path):
    port = free_port()
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracked_search.uri,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "mlflow"), "models", "serve", "-m",
         "models:/churn-agentic@challenger", "--env-manager", "local", "-h", "127.0.0.1",
         "-p", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"server exited: {(tmp_path / 'serve.log').read_text()[-2000:]}")
            try:
                if requests.get(f"{url}/ping", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.5)
        else:
            pytest.fail("server not ready in 120 s")
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def test_served_predictions_equal_in_process(served_challenger, tracked_search):
    X = tracked_search.dataset.X
    rows = X.head(27).copy()
    rows.loc[rows.index[-2:], "TotalCharges"] = " "  # Telco's blanks: text the pipeline coerces
    payload = {"dataframe_split": rows.astype(object).where(rows.notna(), None)
               .to_dict(orient="split")}
    payload["dataframe_split"].pop("index")
    response = requests.post(f"{served_challenger}/invocations", json=payload, timeout=30)
    assert response.status_code == 200, response.text
    served = response.json()["predictions"]
    assert served == list(tracked_search.run.model.predict(rows))
    assert set(served) <= {"Yes", "No"}
