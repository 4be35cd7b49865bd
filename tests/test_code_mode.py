"""Code mode end to end: a scripted OpenAI-compatible team (planner, coder, critic, submitter)
over real HTTP writes candidate.py files; each runs in the real Docker sandbox; the engine
scores, verifies, selects, registers; the model serves; a critic's pivot removes a planted
leak; a killed code search resumes without asking or running anything twice."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
import requests

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.engine.evaluate.code import GENERATED_HEADER
from mlflow_agentic.frontdoor.api import search
from mlflow_agentic.proposers.factory import CodeOptions, LLMOptions
from mlflow_agentic.sandbox import Limits
from mlflow_agentic.tracking.registry import ACCEPT_ENV
from tests.fakes.code_team import BROKEN, CHARGES_PER_MONTH, PLAIN, CodeTeam, section
from tests.fakes.openai_server import ScriptedOpenAI
from tests.servers import free_port, running_server
from tests.test_resume import KillAfter

pytestmark = pytest.mark.slow  # the Docker sandbox

CODE = CodeOptions(max_experiments=3, limits=Limits(memory="1g", cpus=1, timeout=120))


@pytest.fixture(scope="module")
def churn_rows(churn_frame):
    return churn_frame.reset_index(drop=True)


def code_search(uri: str, frame, team: CodeTeam, code: CodeOptions = CODE, **extra):
    server = ScriptedOpenAI(responder=team)
    try:
        return search(frame, "Churn", proposer="code", cv=3, seed=1, tracking_uri=uri,
                      llm=LLMOptions("scripted", server.base_url), code=code,
                      **{"diagnostics": False, **extra}), server
    finally:
        server.close()


@pytest.fixture(scope="module")
def churn_code(tmp_path_factory, churn_rows, docker_sandbox):
    uri = f"sqlite:///{tmp_path_factory.mktemp('code') / 'mlflow.db'}"
    team = CodeTeam(["plain logistic", "charges per month", "forgetful coder"],
                    {"plain logistic": PLAIN, "charges per month": CHARGES_PER_MONTH,
                     "forgetful coder": BROKEN})
    result, server = code_search(uri, churn_rows, team, register_name="churn-code")
    return uri, result, team, server


def test_a_code_search_on_churn_is_verified_selected_by_the_submitter_and_registered(
        churn_code):
    uri, result, team, _ = churn_code
    run = result.run
    assert [a.status for a in run.attempts] == ["verified", "verified", "failed"]
    plain, per_month, broken = run.attempts
    assert per_month.params["hypothesis"] == "charges per month"
    assert "build: ValueError: the coder forgot" in broken.error  # the stage, then the error
    assert team.roles == ["planner", "coder", "critic", "coder", "critic", "coder", "critic",
                          "submitter"]
    best = max((plain, per_month), key=lambda a: a.score)
    assert run.best_attempt is best and run.selection == "submitter"
    assert run.selection_note.startswith(f"submitter chose attempt {best.index}: ")
    assert result.holdout.selected.index == best.index  # the sealed holdout, scored afterwards
    assert 0.75 < result.holdout.selected.holdout < 0.95
    assert result.model_version is not None and result.model_version.name == "churn-code"


def test_each_code_attempt_keeps_its_code_plan_critic_note_and_sandbox_limits(churn_code):
    uri, result, _, _ = churn_code
    client = mlflow.MlflowClient(tracking_uri=uri)
    parent = client.get_run(result.run_id)
    assert parent.data.params["proposer"] == "code"
    assert parent.data.params["sandbox"] == "docker"
    assert parent.data.params["max_experiments"] == "3"
    children = {int(r.data.tags["attempt.index"]): r for r in client.search_runs(
        [parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{result.run_id}'")}
    assert sorted(children) == [1, 2, 3]
    for index, child in children.items():
        tags = child.data.tags
        assert tags["sandbox"] == "docker" and tags["sandbox.memory"] == "1g"
        assert tags["sandbox.timeout"] == "120" and tags["critic"] == "accepted"
        names = {f.path for f in client.list_artifacts(child.info.run_id)}
        assert {"candidate.py", "plan.json", "critic.md"} <= names
        code = Path(client.download_artifacts(child.info.run_id, "candidate.py")).read_text()
        assert code == GENERATED_HEADER + result.run.attempts[index - 1].candidate.code
        assert code.startswith("# Written by an LLM") and "runs that code on this machine" in code
    features = json.loads(Path(client.download_artifacts(
        children[2].info.run_id, "sandbox/features.json")).read_text())
    assert any("charges_per_month" in f for f in features)
    assert "error.txt" in {f.path for f in client.list_artifacts(children[3].info.run_id)}
    traces = client.search_traces(locations=[parent.info.experiment_id],
                                  run_id=result.run_id)
    names = sorted(t.data.spans[0].name for t in traces)
    assert names.count("llm.coder") == 3 and names.count("llm.planner") == 1
    assert "llm.submitter" in names and names.count("llm.critic") == 3


def test_the_registered_code_model_serves_over_http(churn_code, churn_rows, tmp_path):
    uri, result, _, _ = churn_code
    port = free_port()
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, ACCEPT_ENV: "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [str(Path(sys.executable).parent / "mlflow"), "models", "serve", "-m",
               "models:/churn-code@challenger", "--env-manager", "local", "-h", "127.0.0.1",
               "-p", str(port)]
    rows = churn_rows.drop(columns=["Churn"]).head(20)
    with running_server(command, f"http://127.0.0.1:{port}/ping", tmp_path / "serve.log", 120,
                        env):
        response = requests.post(f"http://127.0.0.1:{port}/invocations", timeout=60, json={
            "dataframe_split": json.loads(rows.to_json(orient="split", index=False))})
    assert response.status_code == 200, response.text
    served = response.json()["predictions"]
    assert served == list(result.run.model.predict(rows))
    assert set(served) <= {"Yes", "No"}


def test_a_code_model_loads_only_where_its_code_is_accepted(churn_code, monkeypatch):
    """W9: loading a code-mode model runs its code, so a plain load refuses and says how."""
    uri, _, _, _ = churn_code
    monkeypatch.delenv(ACCEPT_ENV, raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    with pytest.raises(mlflow.exceptions.MlflowException, match=f"{ACCEPT_ENV}=1"):
        mlflow.pyfunc.load_model("models:/churn-code@challenger")


def test_the_documented_container_serve_has_no_network(churn_code, churn_rows, tmp_path,
                                                       docker_sandbox):
    """W9: the docs' container serve runs with --network none, reached over a Unix socket; a
    listener on the host's 127.0.0.1 is out of its reach."""
    import socket
    import subprocess
    import time

    uri, result, _, _ = churn_code
    served = tmp_path / "served"
    mlflow.artifacts.download_artifacts("models:/churn-code@challenger", dst_path=str(served),
                                        tracking_uri=uri)
    sock = tmp_path / "sock"
    sock.mkdir()
    venv = Path(sys.executable).parent.parent
    home = Path(os.path.realpath(sys.executable)).parent.parent
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    name = f"code-serving-{os.getpid()}"
    command = ["docker", "run", "-d", "--name", name, "--network", "none", "--read-only",
               "--tmpfs", "/tmp", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
               "--memory", "2g", "--pids-limit", "256", "-e", "HOME=/tmp",
               "-e", f"PATH={venv}/bin:/usr/bin:/bin", "-e", f"{ACCEPT_ENV}=1",
               "-e", "__pyfunc_model_path__=/model",
               "-v", f"{home}:{home}:ro", "-v", f"{venv}:{venv}:ro",
               "-v", f"{served}:/model:ro", "-v", f"{sock}:/sock", docker_sandbox.image,
               f"{venv}/bin/uvicorn", "--uds", "/sock/model.sock",
               "mlflow.pyfunc.scoring_server.app:app"]
    subprocess.run(command, check=True, capture_output=True)
    try:
        rows = churn_rows.drop(columns=["Churn"]).head(20)
        body = json.dumps({"dataframe_split": json.loads(rows.to_json(orient="split",
                                                                      index=False))})
        deadline = time.monotonic() + 120
        while not (sock / "model.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        answer = subprocess.run(
            ["curl", "-s", "--retry", "30", "--retry-connrefused", "--retry-delay", "1",
             "--unix-socket", str(sock / "model.sock"), "http://model/invocations",
             "-H", "Content-Type: application/json", "-d", body],
            capture_output=True, text=True, timeout=120)
        assert json.loads(answer.stdout)["predictions"] == list(result.run.model.predict(rows))
        reach = subprocess.run(
            ["docker", "exec", name, f"{venv}/bin/python", "-c",
             f"import socket; socket.create_connection(('127.0.0.1', "
             f"{listener.getsockname()[1]}), timeout=3)"], capture_output=True, text=True)
        assert reach.returncode != 0, "the served model reached the host's 127.0.0.1"
        with pytest.raises(BlockingIOError):  # nothing connected to the host's listener
            listener.accept()
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        listener.close()


def leak_critic(user: str) -> dict:
    """Objects to a candidate whose features use the flagged column, and pivots to drop it."""
    features = section(user, "Features the candidate's pipeline makes") or {}
    if "refund_flag" in features.get("input columns the feature names mention", []):
        return {"accept": False, "note": "uses refund_flag, which the findings flag",
                "pivot": {"drop_columns": ["refund_flag"], "cv_advice": ""}}
    return {"accept": True, "note": "no flagged column used", "pivot": None}


def test_the_critic_pivot_removes_a_planted_leak(tmp_path, churn_rows, docker_sandbox):
    frame = churn_rows.copy()
    rng = np.random.default_rng(0)
    leak = (frame["Churn"] == "Yes").to_numpy() ^ (rng.random(len(frame)) < 0.03)
    frame["refund_flag"] = leak.astype(int)  # recorded after the outcome: a planted leak
    team = CodeTeam(["all columns", "all columns again"],
                    {"all columns": PLAIN, "all columns again": PLAIN}, critic=leak_critic)
    result, _ = code_search(f"sqlite:///{tmp_path / 'mlflow.db'}", frame, team,
                            CodeOptions(max_experiments=2, limits=CODE.limits),
                            keep_flagged_columns=True, register=False)
    assert any(f.column == "refund_flag" for f in result.briefing.findings)
    first, second = result.run.attempts
    assert first.tags["critic"] == "objected" and "refund_flag" in first.tags["critic.pivot"]
    assert any("refund_flag" in f for f in json.loads(first.artifacts["sandbox/features.json"]))
    assert second.params["dropped_columns"] == "refund_flag"  # the engine dropped it
    assert not any("refund_flag" in f
                   for f in json.loads(second.artifacts["sandbox/features.json"]))
    assert team.roles.count("planner") == 2  # re-planned after the pivot
    assert first.score > 0.95 > second.score  # the leak's score was not earned
    assert result.run.best_attempt is second  # the submitter took the accepted attempt
    assert abs(result.holdout.selected.gap) < 0.05  # and it holds on the sealed holdout


def test_a_killed_code_search_resumes_asking_and_running_nothing_twice(
        tmp_path, churn_rows, churn_code, docker_sandbox):
    _, expected, whole_team, _ = churn_code
    team = CodeTeam(whole_team.plan, whole_team.code)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with pytest.raises(KeyboardInterrupt):
        code_search(uri, churn_rows, team, register=False, observers=[KillAfter(2)])
    asked = list(team.roles)
    assert asked == ["planner", "coder", "critic", "coder", "critic"]
    client = mlflow.MlflowClient(tracking_uri=uri)
    (parent,) = client.search_runs(["1"], "tags.`agentic.role` = 'search'")
    result, _ = code_search(uri, churn_rows, team, register=False, resume=parent.info.run_id)
    assert team.roles[len(asked):] == ["coder", "critic", "submitter"]  # only the new calls
    assert [(a.index, a.params["code_sha256"], a.status, a.fold_scores)
            for a in result.run.attempts] == [
        (a.index, a.params["code_sha256"], a.status, a.fold_scores)
        for a in expected.run.attempts]
    assert [a.restored for a in result.run.attempts] == [True, True, False]
    assert result.run.best_attempt.index == expected.run.best_attempt.index
    assert result.holdout.selected.holdout == pytest.approx(
        expected.holdout.selected.holdout, abs=1e-9)
    runs = client.search_runs(["1"], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert sorted(int(r.data.tags["attempt.index"]) for r in runs) == [1, 2, 3]
    assert client.get_run(parent.info.run_id).info.status == "FINISHED"


def test_no_docker_means_no_code_mode_and_host_runs_are_labelled(tmp_path, churn_rows,
                                                                 monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    team = CodeTeam(["plain logistic"], {"plain logistic": PLAIN})
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with pytest.raises(UserInputError, match="no Docker daemon answers.*allow-host-execution"):
        code_search(uri, churn_rows, team, CodeOptions(max_experiments=1))
    assert team.roles == []  # refused before any call or run
    assert mlflow.MlflowClient(tracking_uri=uri).search_runs(["0"]) == []
    result, _ = code_search(uri, churn_rows, team, CodeOptions(
        max_experiments=1, allow_host_execution=True, limits=Limits(timeout=120)),
        register=False)
    (attempt,) = result.run.attempts
    assert attempt.status == "verified" and attempt.tags["sandbox"] == "host"


EXFILTRATE = '''
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

PREP = make_column_transformer(
    (make_pipeline(SimpleImputer(), StandardScaler()),
     make_column_selector(dtype_include="number")),
    (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_exclude="number")))


def row_keys(X):
    return ["k" + format(int(h), "016x")[:10]
            for h in pd.util.hash_pandas_object(X.reset_index(drop=True), index=False)]


class Exfiltrate(BaseEstimator, TransformerMixin):
    """Honest features, and as their "names" the keys of the positive training rows."""

    def fit(self, X, y=None):
        self.prep_ = clone(PREP).fit(X, y)
        self.keys_ = [k for k, label in zip(row_keys(X), y) if label == "Yes"]
        return self

    def transform(self, X):
        return self.prep_.transform(X)

    def get_feature_names_out(self, input_features=None):
        return ["_".join(self.keys_[i:i + 18]) for i in range(0, len(self.keys_), 18)]


def build_pipeline(columns):
    return make_pipeline(Exfiltrate(), LogisticRegression(max_iter=2000))
'''

KEY = r"k[0-9a-f]{10}"


def self_grading(user: str) -> str:
    """The coder a leak would feed: rows whose key it was told are predicted positive."""
    import re

    keys = sorted(set(re.findall(KEY, user)))
    return EXFILTRATE.split("def row_keys")[0] + f'''
KEYS = set({keys!r})


def row_keys(X):
    return ["k" + format(int(h), "016x")[:10]
            for h in pd.util.hash_pandas_object(X.reset_index(drop=True), index=False)]


class SelfGraded(BaseEstimator):
    def fit(self, X, y):
        self.model_ = make_pipeline(clone(PREP), LogisticRegression(max_iter=2000)).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        proba = self.model_.predict_proba(X)
        yes = list(self.classes_).index("Yes")
        for i, key in enumerate(row_keys(X)):
            if key in KEYS:
                proba[i] = 0.0
                proba[i, yes] = 1.0
        return proba


def build_pipeline(columns):
    return SelfGraded()
'''


def relaying_critic(user: str) -> dict:
    """A critic that repeats whatever row keys reach its prompt, in its note and its pivot's
    advice (which every later coder prompt carries)."""
    import re

    keys = " ".join(sorted(set(re.findall(KEY, user))))
    return {"accept": True, "note": f"features {keys}"[:2000],
            "pivot": {"drop_columns": [], "cv_advice": f"use these rows: {keys}"}}


def test_w3_a_candidate_cannot_grade_itself_through_the_critic(tmp_path, churn_rows,
                                                               docker_sandbox):
    """Candidate 1 returns, as its feature names, keys of the positive training rows; a
    relaying critic and coder would build candidate 2 from them (0.96 CV where 0.84 is
    honest). The critic sees a summary the host builds, so no key reaches any prompt."""
    import re

    team = CodeTeam(["exfiltrate", "self graded"],
                    {"exfiltrate": EXFILTRATE, "self graded": self_grading},
                    critic=relaying_critic)
    result, server = code_search(f"sqlite:///{tmp_path / 'mlflow.db'}", churn_rows, team,
                                 CodeOptions(max_experiments=2, limits=CODE.limits),
                                 register=False)
    first, second = result.run.attempts
    made = json.loads(first.artifacts["sandbox/features.json"])
    assert len(re.findall(KEY, " ".join(made))) > 100  # the attack was made (kept as a log)
    prompts = [m["content"] for body in server.requests for m in body["messages"]]
    assert not any(re.search(KEY, p) for p in prompts)  # and reached no prompt
    assert first.status == second.status == "verified"
    assert second.score < first.score + 0.02  # no better than the honest features
