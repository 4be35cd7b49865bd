"""mlflow-agentic as an MLflow plugin: the `agentic` model evaluator on a model logged without
mlflow-agentic, the run-context provider, a deliberately broken plugin that only warns, and the
example trainer package under plugins/ (installed by CI)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import mlflow
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from tests.conftest import fake_distribution, scripted_frame


def evaluate_plain_model(frame: pd.DataFrame):
    """Log a scikit-learn model with plain MLflow, then evaluate it with evaluators=["agentic"]."""
    X, y = frame.drop(columns=["target"]), frame["target"]
    mlflow.set_experiment("plain-models")  # this store's, not one left over by another test
    with mlflow.start_run() as run:
        info = mlflow.sklearn.log_model(LogisticRegression().fit(X, y), name="model",
                                        input_example=X.head(3))
        result = mlflow.models.evaluate(info.model_uri, frame, targets="target",
                                        model_type="classifier", evaluators=["agentic"])
    return result, mlflow.MlflowClient().get_run(run.info.run_id)


def test_entry_points_are_declared():
    assert "agentic" in {e.name for e in entry_points(group="mlflow.model_evaluator")}
    assert "agentic" in {e.name for e in entry_points(group="mlflow.run_context_provider")}


@pytest.mark.slow
def test_agentic_evaluator_on_a_plain_sklearn_model(tracking_uri):
    result, run = evaluate_plain_model(scripted_frame(600, seed=3))
    m = result.metrics
    assert m["agentic_baseline_roc_auc"] == 0.5  # the class prior on the same rows
    assert 0.7 < m["agentic_roc_auc"] < 0.98
    assert m["agentic_verified"] == 1.0 and m["agentic_quarantined"] == 0.0
    assert run.data.metrics["agentic_roc_auc"] == m["agentic_roc_auc"]
    assert run.data.tags["agentic.verdict"] == "verified"
    report = result.artifacts["agentic_evaluation"].content
    assert report["reason"].startswith("beats the trivial baseline")
    assert isinstance(report["findings"], list)
    assert "agentic_evaluation.json" in {f.path for f in
                                         mlflow.MlflowClient().list_artifacts(run.info.run_id)}


@pytest.mark.slow
def test_agentic_evaluator_reports_leakage_and_quarantines(tracking_uri):
    frame = scripted_frame(600, seed=4)
    rng = np.random.default_rng(0)
    frame["refund_issued"] = np.where(rng.random(len(frame)) < 0.01, 1 - frame["target"],
                                      frame["target"])  # the outcome, written down later
    result, run = evaluate_plain_model(frame)
    findings = result.artifacts["agentic_evaluation"].content["findings"]
    assert any(f["check"] == "single_feature" and f["column"] == "refund_issued" and
               f["severity"] == "critical" for f in findings)
    assert result.metrics["agentic_findings_critical"] >= 1
    assert result.metrics["agentic_quarantined"] == 1.0  # too good to be true
    assert run.data.tags["agentic.verdict"] == "quarantined"


def test_run_context_tags_our_runs_and_nothing_else(tracking_uri):
    from mlflow_agentic.core.version import __version__
    from mlflow_agentic.tracking.store import begin as begin_context
    from mlflow_agentic.tracking.store import end as end_context

    mlflow.set_experiment("plain-runs")
    with mlflow.start_run() as plain:
        pass
    token = begin_context(search_id="abc123", proposer="optuna")
    try:
        with mlflow.start_run() as ours:
            pass
    finally:
        end_context(token)
    client = mlflow.MlflowClient()
    assert not any(k.startswith("agentic.") for k in client.get_run(plain.info.run_id).data.tags)
    tags = client.get_run(ours.info.run_id).data.tags
    assert tags["agentic.version"] == __version__ and tags["agentic.search_id"] == "abc123"
    assert tags["agentic.proposer"] == "optuna"


@pytest.mark.slow
def test_search_runs_carry_the_version_and_search_identity(tracked_search):
    parent = tracked_search.client.get_run(tracked_search.tracker.parent_run_id)
    child = tracked_search.client.get_run(tracked_search.tracker.child_run_ids[1])
    for run in (parent, child):
        assert run.data.tags["agentic.search_id"] == tracked_search.tracker.search_id
        assert "agentic.version" in run.data.tags


BROKEN = textwrap.dedent('''
    raise ImportError("deliberately broken MLflow plugin")
''')


@pytest.mark.slow
def test_a_broken_mlflow_plugin_warns_and_mlflow_still_works(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    fake_distribution(site, "broken_mlflow_plugin", BROKEN,
                      "[mlflow.run_context_provider]\nbroken = broken_mlflow_plugin:Provider\n\n"
                      "[mlflow.model_evaluator]\nbroken = broken_mlflow_plugin:Evaluator\n\n"
                      "[mlflow_agentic.trainers]\nbroken = broken_mlflow_plugin:TRAINER\n")
    script = textwrap.dedent(f'''
        import mlflow, pandas as pd
        from sklearn.linear_model import LogisticRegression
        from tests.conftest import fake_distribution, scripted_frame
        mlflow.set_tracking_uri("sqlite:///{tmp_path / 'mlflow.db'}")
        frame = scripted_frame(300)
        X, y = frame.drop(columns=["target"]), frame["target"]
        with mlflow.start_run():
            info = mlflow.sklearn.log_model(LogisticRegression().fit(X, y), name="model")
            result = mlflow.models.evaluate(info.model_uri, frame, targets="target",
                                            model_type="classifier", evaluators=["agentic"])
        from mlflow_agentic.trainers import resolve_trainers
        print("AUC", result.metrics["agentic_roc_auc"],
              "trainers", resolve_trainers(None, "binary"))
    ''')
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PYTHONPATH"] = f"{site}{os.pathsep}{os.getcwd()}"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr[-3000:]
    assert "AUC" in done.stdout and "broken" not in done.stdout.split("trainers")[1]
    assert "deliberately broken MLflow plugin" in done.stderr  # warned, not raised


@pytest.mark.search
@pytest.mark.slow  # over ~3 s
def test_example_trainer_package_is_offered_and_tracked(tracking_uri, churn_small):
    """plugins/knn-trainer, installed with pip (CI does): `knn` is a trainer like the others."""
    from mlflow_agentic import OptunaProposer
    from mlflow_agentic.engine import AgenticAutoML
    from mlflow_agentic.tracking import MlflowTracker
    from mlflow_agentic.trainers import get_trainer, resolve_trainers

    assert "knn" in {e.name for e in entry_points(group="mlflow_agentic.trainers")}, \
        "pip install -e plugins/knn-trainer (the README's test command does)"
    assert "knn" in resolve_trainers(None, "binary")  # offered to every proposer by default
    assert get_trainer("knn").source == "mlflow-agentic-knn"
    tracker = MlflowTracker(register=False)
    run = AgenticAutoML(OptunaProposer(seed=0), max_iterations=2, patience=5, cv=3,
                        trainers=["linear", "knn"], observers=[tracker]).solve(churn_small)
    knn = [a for a in run.attempts if a.candidate.trainer == "knn"]
    assert knn and knn[0].verdict.valid
    child = mlflow.MlflowClient().get_run(tracker.child_run_ids[knn[0].index])
    assert child.data.tags["trainer"] == "knn" and child.data.params["n_neighbors"]
    assert child.data.tags["verdict"] == "verified"
