"""The registered model, served by `mlflow models serve`, answers like the in-process model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import requests

from tests.servers import free_port, running_server


@pytest.fixture
def served_challenger(tracked_search, tmp_path):
    port = free_port()
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracked_search.uri,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    url = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).parent / "mlflow"), "models", "serve", "-m",
               "models:/churn-agentic@challenger", "--env-manager", "local", "-h",
               "127.0.0.1", "-p", str(port)]
    with running_server(command, f"{url}/ping", tmp_path / "serve.log", 120, env):
        yield url


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
