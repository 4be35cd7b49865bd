"""Every attempt as code: each attempt run holds ``attempt.py``, which rebuilds that attempt from
the file the search read and reproduces its recorded CV score to 4 decimals; the selected
ensemble's script rebuilds the model the holdout scored and the registered model. Run here as a
user runs them, one per trainer, against a real search in a sqlite store."""

from __future__ import annotations

import runpy
import sys

import mlflow
import numpy as np
import pytest

from mlflow_agentic import SequenceProposer, SolutionCandidate
from mlflow_agentic.core import evidence as ev
from mlflow_agentic.data import Dataset
from mlflow_agentic.trainers import trainer_registry

NAME = "churn-scripts"


@pytest.fixture(scope="module")
def scripted_search(tmp_path_factory, churn_frame):
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    root = tmp_path_factory.mktemp("scripts")
    csv = root / "churn.csv"
    churn_frame.to_csv(csv, index=False)
    trainers = [n for n, t in trainer_registry().items() if not t.on_request]
    uri = f"sqlite:///{root / 'mlflow.db'}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        tracker = MlflowTracker(experiment="scripts", register_name=NAME, register="always")
        run_search(Dataset.from_path(csv, "Churn"),
                   lambda: SequenceProposer([SolutionCandidate(n, {}) for n in trainers]),
                   max_iterations=len(trainers), patience=len(trainers), cv=3, seed=0,
                   tracker=tracker)
    finally:
        mlflow.set_tracking_uri(previous)
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.get_experiment_by_name("scripts").experiment_id
    runs = client.search_runs([experiment], "tags.`agentic.role` = 'attempt'")
    return uri, client, csv, {r.data.tags["trainer"]: r for r in runs}, trainers


def rerun(client, run, csv, capsys):
    """``python attempt.py DATA`` in this process: its printed lines and its globals."""
    path = client.download_artifacts(run.info.run_id, "attempt.py")
    argv = sys.argv
    sys.argv = [path, str(csv)]
    try:
        found = runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = argv
    return capsys.readouterr().out, found


@pytest.mark.parametrize("trainer", [n for n, t in trainer_registry().items()
                                     if not t.on_request])
@pytest.mark.slow
def test_each_attempts_script_reproduces_its_recorded_cv_score(scripted_search, trainer,
                                                               capsys):
    uri, client, csv, runs, _ = scripted_search
    run = runs[trainer]
    out, found = rerun(client, run, csv, capsys)
    recorded = run.data.metrics["cv_roc_auc"]
    assert f"CV roc_auc {recorded:.4f} over 3 folds (recorded: roc_auc {recorded:.4f})" in out
    assert found["model"].predict_proba(found["train"].X.head(3)).shape == (3, 2)


@pytest.mark.slow
def test_the_selected_ensembles_script_rebuilds_the_registered_model(scripted_search,
                                                                     churn_frame, capsys):
    """Its ``model`` is the model the holdout scored (logged as the holdout's evidence);
    ``fit(everything)`` is the registered one, the recipe refit on every labelled row."""
    uri, client, csv, runs, trainers = scripted_search
    version = client.get_model_version(NAME, "1")
    selected = client.get_run(version.run_id)
    assert selected.data.tags["trainer"] == "ensemble", "precondition: an ensemble won"
    out, found = rerun(client, selected, csv, capsys)
    assert out.count("member ") == len(selected.data.params["members"].split(","))
    assert selected.data.params[ev.SERVED_ROWS] == str(found["everything"].n_rows) == "800"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        registered = mlflow.pyfunc.load_model(f"models:/{NAME}/1")
        scored = mlflow.pyfunc.load_model(selected.data.params[ev.EVIDENCE_MODEL_URI])
    finally:
        mlflow.set_tracking_uri(previous)
    X = churn_frame.drop(columns=["Churn"]).head(50)
    for rebuilt, logged in ((found["model"], scored),
                            (found["fit"](found["everything"]), registered)):
        served = logged.predict(X, params={"output": "probabilities"})
        probabilities = served[[c for c in served.columns if c.startswith("probability_")]]
        np.testing.assert_allclose(rebuilt.predict_proba(X), probabilities.to_numpy(float),
                                   atol=1e-6)


def test_a_crafted_file_name_cannot_run_as_code_in_the_script():
    """A data file named with a docstring's quotes and ``__import__``: the name stays text."""
    import ast

    from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, Verdict
    from mlflow_agentic.engine.after.script import attempt_script

    name = 'x"""; __import__("os").system("touch pwned"); """.csv'
    record = AttemptRecord(SolutionCandidate("linear", {}), 0.8, Verdict(True, "ok", 0.8),
                           index=1, metric="roc_auc", params={"C": 1.0})
    recipe = {"source": f"/data/{name}", "target": "y", "task": "binary", "split": {},
              "cv": 3, "cv_scheme": "stratified", "keep_flagged_columns": False,
              "large_rows": 0}
    script = attempt_script(record, recipe, {}, search="abc", n_splits=3, seed=0)
    tree = ast.parse(script)
    calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name)]
    assert "__import__" not in calls
    assert ast.get_docstring(tree).count("__import__") == 1  # said, in the docstring
    assert repr(f"/data/{name}") in script  # the code names the file by its repr
