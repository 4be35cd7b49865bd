"""The registered model, served by `mlflow models serve`, answers like the in-process model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import requests

from tests.servers import free_port, running_server

pytestmark = pytest.mark.slow  # mlflow models serve


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
    rows["TotalCharges"] = rows["TotalCharges"].astype(object)  # typed at read; requests send
    rows.loc[rows.index[-2:], "TotalCharges"] = " "  # Telco's blanks: text the pipeline coerces
    payload = {"dataframe_split": rows.astype(object).where(rows.notna(), None)
               .to_dict(orient="split")}
    payload["dataframe_split"].pop("index")
    response = requests.post(f"{served_challenger}/invocations", json=payload, timeout=30)
    assert response.status_code == 200, response.text
    served = response.json()["predictions"]
    assert served == list(tracked_search.run.model.predict(rows))
    assert set(served) <= {"Yes", "No"}


@pytest.fixture(scope="module")
def champion(tmp_path_factory, churn_frame):
    """churn-served v1 from an honest search, promoted to @champion by the gate."""
    import mlflow

    from mlflow_agentic.data import Dataset
    from mlflow_agentic.tracking.registry import promote
    from tests.conftest import registered_search

    frame = churn_frame.copy()
    frame.loc[frame.index[:25], "TotalCharges"] = " "  # blanks, as in the Telco file
    root = tmp_path_factory.mktemp("champion")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    search = registered_search(uri, Dataset.from_frame(frame, name="churn"), "churn-served",
                               ["linear"])
    mlflow.set_tracking_uri(uri)
    try:
        outcome = promote("churn-served")
    finally:
        mlflow.set_tracking_uri(None)
    assert outcome.decision.promoted, outcome.decision.summary
    return search, frame


@pytest.fixture(scope="module")
def served_champion(champion, tmp_path_factory):
    search, _ = champion
    port = free_port()
    env = {**os.environ, "MLFLOW_TRACKING_URI": search.uri,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    url = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).parent / "mlflow"), "models", "serve", "-m",
               "models:/churn-served@champion", "--env-manager", "local", "-h", "127.0.0.1",
               "-p", str(port)]
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with running_server(command, f"{url}/ping", log, 120, env):
        yield url


def _post(url, rows):
    payload = {"dataframe_split": rows.astype(object).where(rows.notna(), None)
               .to_dict(orient="split")}
    payload["dataframe_split"].pop("index")
    return requests.post(f"{url}/invocations", json=payload, timeout=30)


def test_champion_serves_raw_rows_unseen_categories_and_missing_columns(served_champion,
                                                                        champion):
    search, frame = champion
    model = search.result.run.model
    rows = frame.drop(columns=["Churn"]).tail(6).copy()
    rows.loc[rows.index[0], "SeniorCitizen"] = None  # an int column with a missing value

    valid = _post(served_champion, rows)
    assert valid.status_code == 200, valid.text
    assert valid.json()["predictions"] == list(model.predict(rows))

    unseen = rows.assign(PaymentMethod="Carrier pigeon", Contract="Lifetime")
    response = _post(served_champion, unseen)
    assert response.status_code == 200, response.text
    assert response.json()["predictions"] == list(model.predict(unseen))  # handled

    assert "TotalCharges" in model.named_steps["inputs"].optional_
    no_optional = rows.drop(columns=["TotalCharges"])
    response = _post(served_champion, no_optional)
    assert response.status_code == 200, response.text  # added back as missing, imputed
    assert response.json()["predictions"] == list(model.predict(no_optional))

    no_required = rows.drop(columns=["tenure"])
    response = _post(served_champion, no_required)
    assert response.status_code == 400
    body = response.json()
    assert "tenure" in body["message"] and "missing" in body["message"].lower()
    assert "stack_trace" not in body and "Traceback" not in response.text


def test_a_value_that_is_not_a_number_is_refused_with_the_column(served_champion, champion):
    search, frame = champion
    rows = frame.drop(columns=["Churn"]).tail(3).copy()
    rows["tenure"] = rows["tenure"].astype(object)
    rows.loc[rows.index[0], "tenure"] = "abc"
    response = _post(served_champion, rows)
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert "column 'tenure' is numeric, but got 'abc' in 1 row(s)" in message
    rows.loc[rows.index[0], "tenure"] = " "  # a blank stays "missing", imputed as in training
    response = _post(served_champion, rows)
    assert response.status_code == 200, response.text
    assert response.json()["predictions"] == list(search.result.run.model.predict(rows))


def test_served_probabilities_alongside_labels_without_the_id_column(served_champion,
                                                                      champion):
    search, frame = champion
    model = search.result.run.model
    rows = frame.drop(columns=["Churn", "customerID"]).tail(5)  # the excluded ID is optional
    payload = {"dataframe_split": rows.astype(object).where(rows.notna(), None)
               .to_dict(orient="split"), "params": {"output": "probabilities"}}
    payload["dataframe_split"].pop("index")
    response = requests.post(f"{served_champion}/invocations", json=payload, timeout=30)
    assert response.status_code == 200, response.text
    served = response.json()["predictions"]
    assert [p["label"] for p in served] == list(model.predict(rows))
    proba = model.predict_proba(rows)
    assert [p["probability_Yes"] for p in served] == pytest.approx(proba[:, 1])
    assert [p["probability_No"] for p in served] == pytest.approx(proba[:, 0])
    payload["params"] = {"output": "odds"}
    refused = requests.post(f"{served_champion}/invocations", json=payload, timeout=30)
    assert refused.status_code == 400 and "label, probabilities" in refused.json()["message"]


def test_an_ensemble_marks_the_columns_its_members_impute_optional(tmp_path, churn_frame):
    """A WeightedEnsemble winner's signature marks TotalCharges (blank in training) optional,
    as a single pipeline's does, and the logged model answers a request without it."""
    import mlflow
    import numpy as np

    from mlflow_agentic.data import Dataset
    from mlflow_agentic.tracking.registry import log_model
    from mlflow_agentic.trainers.registry import get_trainer
    from mlflow_agentic.trainers.transforms import WeightedEnsemble

    frame = churn_frame.head(300).copy()
    frame["TotalCharges"] = frame["TotalCharges"].astype(object)
    frame.loc[frame.index[:10], "TotalCharges"] = " "
    dataset = Dataset.from_frame(frame, name="churn")
    members = [get_trainer(t).pipeline(dataset).fit(dataset.X, dataset.y)
               for t in ("linear", "random_forest")]
    ensemble = WeightedEnsemble(members, [0.5, 0.5], list(dataset.classes))
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        mlflow.set_experiment("ensemble-schema")
        with mlflow.start_run():
            info = log_model(ensemble, dataset)
        loaded = mlflow.pyfunc.load_model(info.model_uri)
    finally:
        mlflow.set_tracking_uri(previous)
    schema = info.signature.inputs
    optional = {c.name for c in schema.inputs if not c.required}
    assert "TotalCharges" in optional and "customerID" in optional
    assert "tenure" not in optional  # never missing in training: required
    rows = dataset.X.head(3).drop(columns=["TotalCharges", "customerID"])
    assert set(loaded.predict(rows)) <= {"Yes", "No"}
    assert isinstance(loaded.unwrap_python_model().model, WeightedEnsemble)
    np.testing.assert_allclose(
        loaded.unwrap_python_model().model.predict_proba(rows),
        ensemble.predict_proba(rows))
