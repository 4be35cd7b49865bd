"""The user's other doors into a finished search: ``mlflow-agentic leaderboard`` (the table a
past search logged) and ``mlflow-agentic predict`` (a model's predictions of a file, refusing
what serving refuses), against a real registered search in a sqlite store."""

from __future__ import annotations

import io
import json

import mlflow
import pandas as pd
import pytest
from click.testing import CliRunner

from mlflow_agentic.cli import main
from mlflow_agentic.data import Dataset
from tests.conftest import registered_search

NAME = "churn-doors"


@pytest.fixture(scope="module")
def searched(tmp_path_factory, churn_frame):
    uri = f"sqlite:///{tmp_path_factory.mktemp('doors') / 'mlflow.db'}"
    found = registered_search(uri, Dataset.from_frame(churn_frame, name="churn"), NAME,
                              ["linear", "hist_gradient_boosting"])
    return uri, found


def cli(uri: str, *args: str):
    previous = mlflow.get_tracking_uri()
    try:
        return CliRunner().invoke(main, [*args, "--tracking-uri", uri])
    finally:
        mlflow.set_tracking_uri(previous)


@pytest.mark.slow
def test_leaderboard_last_prints_the_searchs_table_in_each_format(searched):
    uri, found = searched
    run_id = found.tracker.parent_run_id
    table = cli(uri, "leaderboard")
    assert table.exit_code == 0, table.output
    assert f"search run {run_id}" in table.output and "cv_roc_auc" in table.output
    assert "01-linear" in table.output and "holdout_roc_auc" in table.output
    frame = pd.read_csv(io.StringIO(cli(uri, "leaderboard", run_id, "--format", "csv").output))
    assert list(frame["attempt"]) == [a.index for a in found.result.run.leaderboard()]
    assert frame["selected"].sum() == 1
    rows = json.loads(cli(uri, "leaderboard", "last", "--format", "json").output)
    assert rows[0]["rank"] == 1 and rows[0]["run_id"]


@pytest.mark.search
def test_leaderboard_of_something_else_says_what_to_pass(searched):
    uri, found = searched
    child = found.tracker.child_run_ids[1]
    result = cli(uri, "leaderboard", child)
    assert result.exit_code == 2
    assert f"is not a search run (its search run is {found.tracker.parent_run_id})" in \
        result.output


@pytest.mark.search
def test_predict_writes_labels_and_probabilities_as_serving_gives_them(searched, churn_frame,
                                                                       tmp_path):
    uri, found = searched
    rows = churn_frame.head(25)
    data = tmp_path / "rows.csv"
    rows.to_csv(data, index=False)
    out = tmp_path / "predictions.csv"
    result = cli(uri, "predict", NAME, "--data", str(data), "-o", str(out),
                 "--keep", "customerID")
    assert result.exit_code == 0, result.output
    predicted = pd.read_csv(out)
    assert list(predicted.columns) == ["customerID", "label", "probability_No",
                                       "probability_Yes"]
    assert list(predicted["customerID"]) == list(rows["customerID"])
    in_process = found.result.run.model.predict(rows.drop(columns=["Churn"]))
    assert list(predicted["label"]) == list(in_process)
    assert ((predicted["probability_Yes"] > 0.5) == (predicted["label"] == "Yes")).all()


@pytest.mark.search
def test_predict_refuses_what_serving_refuses_with_the_same_message(searched, churn_frame,
                                                                    tmp_path):
    uri, _ = searched
    rows = churn_frame.head(3).astype({"tenure": object})
    rows.loc[rows.index[0], "tenure"] = "abc"
    data = tmp_path / "bad.csv"
    rows.to_csv(data, index=False)
    result = cli(uri, "predict", f"{NAME}@challenger", "--data", str(data))
    assert result.exit_code == 2
    assert "column 'tenure' is numeric, but got 'abc' in 1 row(s)" in result.output
    missing = cli(uri, "predict", "no-such-model", "--data", str(data))
    assert missing.exit_code == 2 and f"registered: {NAME}" in missing.output


@pytest.mark.search
def test_predict_names_a_missing_column_in_two_lines_and_warns_of_extra_ones(searched,
                                                                             churn_frame,
                                                                             tmp_path):
    uri, _ = searched
    data = tmp_path / "rows.csv"
    churn_frame.head(5).drop(columns=["tenure"]).assign(note="x").to_csv(data, index=False)
    missing = CliRunner().invoke(main, ["predict", NAME, "--data", str(data),
                                                        "--tracking-uri", uri])
    assert missing.exit_code == 2
    lines = missing.stderr.strip().splitlines()
    assert len(lines) <= 2, missing.stderr
    assert f"the rows of {data} lack 1 column(s) the model needs: tenure" in lines[0]
    assert "the model takes " in lines[1] and f"the rows of {data} have " in lines[1]
    extra = tmp_path / "extra.csv"
    churn_frame.head(5).assign(note="x").to_csv(extra, index=False)
    result = CliRunner().invoke(main, ["predict", NAME, "--data", str(extra),
                                                       "--keep", "customerID", "--tracking-uri",
                                                       uri])
    assert result.exit_code == 0, result.stderr
    assert "ignored 2 column(s) the model does not take: Churn, note" in result.stderr
    assert "customerID" not in result.stderr.split("ignored")[1]


@pytest.mark.slow
def test_ui_serves_the_store_opens_the_search_in_model_training_and_stops_with_the_command(
        searched):
    """``mlflow-agentic ui`` as a user runs it: a real MLflow server on the sqlite store, the
    printed link to the latest search's attempts (its shared view, Model training), the API
    answering for that run; SIGTERM (what Ctrl-C's cousin sends) leaves no server behind."""
    import os
    import signal
    import subprocess
    import sys
    import urllib.request

    from tests.servers import free_port

    uri, found = searched
    run_id, port = found.tracker.parent_run_id, free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mlflow_agentic", "ui", "--no-browser",
                             "--port", str(port), "--tracking-uri", uri],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "DISPLAY": ""})
    try:
        line = proc.stdout.readline()  # printed once the server answers
        assert line.startswith(f"MLflow UI on {uri}: http://127.0.0.1:{port}/#/experiments/")
        assert f"viewStateShareKey={run_id}&workflowType=machine_learning" in line
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/", timeout=10) as page:
            assert page.status == 200
        with urllib.request.urlopen(f"{base}/api/2.0/mlflow/runs/get?run_id={run_id}",
                                    timeout=10) as answer:
            assert json.load(answer)["run"]["info"]["run_id"] == run_id
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    with pytest.raises(OSError):  # the server went with the command
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)


def test_ui_with_no_search_in_the_store_says_what_to_run(tmp_path):
    import mlflow

    store = f"sqlite:///{tmp_path / 'empty.db'}"
    mlflow.MlflowClient(store).search_experiments()  # a store, with no search in it
    result = cli(store, "ui", "--no-browser")
    assert result.exit_code == 2
    assert "no search run in the tracking store" in result.output
    assert "mlflow-agentic run --data FILE" in result.output
    missing = cli(f"sqlite:///{tmp_path / 'nothing.db'}", "ui", "--no-browser")
    assert missing.exit_code == 2 and "run a search first" in missing.output
    assert not (tmp_path / "nothing.db").exists()
