"""What a search leaves in a real MLflow store: runs, params, metrics, verdicts, the model."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_agentic import (
    CandidateProposer,
    Dataset,
    OptunaProposer,
    SequenceProposer,
    SolutionCandidate,
)
from mlflow_agentic.engine import AgenticAutoML
from mlflow_agentic.tracking import MlflowTracker
from mlflow_agentic.trainers import register_trainer, trainer_registry
from tests.conftest import scripted_frame
from tests.scripted import SCRIPTED, q

pytestmark = pytest.mark.search  # its tests run searches in-process


@pytest.fixture
def scripted_trainer():
    register_trainer(SCRIPTED)
    yield "scripted"
    trainer_registry(refresh=True)


def children(client, parent_id):
    return client.search_runs([client.get_run(parent_id).info.experiment_id],
                              f"tags.mlflow.parentRunId = '{parent_id}'",
                              order_by=["attributes.start_time ASC"])


def test_parent_and_one_child_per_attempt(tracked_search):
    t = tracked_search
    parent = t.client.get_run(t.tracker.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert re.fullmatch(r"churn-optuna-\d{4}-\d{6}", parent.info.run_name)  # data, who, when
    experiment = t.client.get_experiment(parent.info.experiment_id)
    assert experiment.name == "churn-agentic"
    # the MLflow UI opens it in its Model training view, not the GenAI one
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    # every setting a user sets is a parameter of the search run (declared once: logged_as)
    from mlflow_agentic.core.settings import SearchSettings

    assert set(SearchSettings().logged()) <= set(parent.data.params)
    kids = children(t.client, parent.info.run_id)
    assert len(kids) == len(t.run.attempts) == 7  # 4 starts (the portfolio's 3, a forest), 3 more
    for kid, attempt in zip(kids, t.run.attempts, strict=True):
        assert kid.info.run_name == f"{attempt.index:02d}-{attempt.candidate.trainer}"
        assert kid.data.params["trainer"] == attempt.candidate.trainer
        assert {k for k in attempt.params} <= set(kid.data.params)
        assert kid.data.metrics["cv_roc_auc"] == round(attempt.score, 4)  # for people
        assert kid.data.metrics["cv_roc_auc_std"] == round(attempt.score_std, 4)
        history = t.client.get_metric_history(kid.info.run_id, "cv_roc_auc_fold")
        assert [m.step for m in history] == [1, 2, 3]
        assert np.mean([m.value for m in history]) == pytest.approx(attempt.score)
        assert kid.data.metrics["fit_seconds"] > 0
        assert kid.data.tags["verdict"] == attempt.status
        assert kid.data.tags["verdict.valid"] == str(attempt.verdict.valid).lower()
        assert kid.data.tags["verdict.reason"] == attempt.verdict.reason
        assert kid.data.tags["proposer"] == "optuna" and kid.data.tags["rationale"]
        assert kid.data.tags["attempt.index"] == str(attempt.index)


def test_parent_holds_baseline_best_input_and_leaderboard(tracked_search):
    t = tracked_search
    parent = t.client.get_run(t.tracker.parent_run_id)
    best_child = t.tracker.child_run_ids[t.run.best_attempt.index]
    assert parent.data.tags["selected_run_id"] == best_child
    assert parent.data.metrics["baseline_roc_auc"] == pytest.approx(0.5)
    assert parent.data.metrics["cv_roc_auc"] == round(t.run.best_score, 4)
    assert parent.data.tags["summary"] == t.run.summary()
    assert parent.inputs.dataset_inputs[0].dataset.name == "churn"
    path = mlflow.artifacts.download_artifacts(run_id=parent.info.run_id,
                                               artifact_path="leaderboard.csv",
                                               tracking_uri=t.uri)
    board = pd.read_csv(path)
    assert len(board) == len(t.run.attempts)
    assert board.iloc[0]["run_id"] == best_child
    assert board["cv_roc_auc"].iloc[0] == round(t.run.best_score, 4)  # rounded, as shown


def test_best_model_registered_with_alias_and_evidence(tracked_search):
    t = tracked_search
    name = "churn-agentic"
    mv = t.client.get_model_version_by_alias(name, "challenger")
    assert mv.tags["metric"] == "roc_auc"
    assert float(mv.tags["cv_roc_auc"]) == round(t.run.best_score, 4)
    assert float(mv.tags["baseline_roc_auc"]) == pytest.approx(0.5)
    assert mv.tags["run_id"] == t.tracker.child_run_ids[t.run.best_attempt.index]
    mlflow.set_tracking_uri(t.uri)
    try:
        loaded = mlflow.pyfunc.load_model(f"models:/{name}@challenger")
        X = t.dataset.X.head(50)
        assert list(loaded.predict(X)) == list(t.run.model.predict(X))
        assert loaded.metadata.signature is not None
        reqs = mlflow.pyfunc.get_model_dependencies(f"models:/{name}@challenger")
        pins = Path(reqs).read_text()
        assert "scikit-learn==" in pins and "mlflow==" in pins
    finally:
        mlflow.set_tracking_uri(None)


def test_nothing_verified_nothing_registered(tracking_uri, scripted_trainer):
    ds = Dataset.from_frame(scripted_frame(), name="noise")
    tracker = MlflowTracker()
    run = AgenticAutoML(SequenceProposer([q(0.0), q(0.0)]), cv=3, trainers=["scripted"],
                        observers=[tracker]).solve(ds)
    assert run.best_candidate is None and run.model is None
    client = mlflow.MlflowClient()
    assert client.search_registered_models() == []
    parent = client.get_run(tracker.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["registered_model"] == "none"
    assert "nothing verified" in parent.data.tags["summary"]


@pytest.mark.slow  # over ~3 s
def test_a_search_with_no_model_logs_no_holdout_rows_for_a_gate_that_cannot_come(
        tracking_uri, scripted_trainer):
    """The sealed rows are logged for the promotion gate, which scores a registered version on
    them; with nothing verified there is no version, and on wide data writing them costs seconds
    a tight budget does not have (grants: 2 s of 20)."""
    from mlflow_agentic.frontdoor.orchestrator import run_search

    ds = Dataset.from_frame(scripted_frame(), name="noise")
    tracker = MlflowTracker()
    result = run_search(ds, lambda: SequenceProposer([q(0.0), q(0.0)]), cv=3,
                        trainers=["scripted"], max_iterations=1, ensemble=False,
                        tracker=tracker)
    assert result.run.model is None
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(tracker.parent_run_id,
                                                                       "evaluation")}
    assert "evaluation/holdout.csv" not in artifacts

    tracker = MlflowTracker(register="never")  # a model: its rows are there for the gate
    run_search(ds, lambda: SequenceProposer(["linear"]), cv=3, max_iterations=0,
               ensemble=False, tracker=tracker)
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(tracker.parent_run_id,
                                                                       "evaluation")}
    assert "evaluation/holdout.csv" in artifacts


@pytest.mark.slow
def test_broken_trainer_is_a_failed_child_run(tracking_uri, churn_small, broken_trainer):
    tracker = MlflowTracker(register=False)
    run = AgenticAutoML(SequenceProposer(["linear", broken_trainer, "xgboost"]), cv=3,
                        patience=5, observers=[tracker], ensemble=False).solve(churn_small)
    assert [a.status for a in run.attempts] == ["verified", "failed", "verified"]
    client = mlflow.MlflowClient()
    failed = client.get_run(tracker.child_run_ids[2])
    assert failed.info.status == "FAILED"
    assert "deliberately broken trainer" in failed.data.tags["error"]
    assert failed.data.tags["verdict"] == "failed"
    assert [a.path for a in client.list_artifacts(failed.info.run_id)] == ["error.txt"]
    parent = client.get_run(tracker.parent_run_id)
    assert parent.info.status == "FINISHED" and parent.data.metrics["n_failed"] == 1


@pytest.mark.slow
def test_interrupted_search_ends_its_runs(tracking_uri, churn_small):
    class Interrupting(CandidateProposer):
        def propose_initial(self, dataset, trainers):
            return [SolutionCandidate("linear")]

        def propose_next(self, dataset, history, trainers):
            raise KeyboardInterrupt

    tracker = MlflowTracker()
    # a KeyboardInterrupt from the proposer is not swallowed (only Exceptions are)
    with pytest.raises(KeyboardInterrupt):
        AgenticAutoML(Interrupting(), cv=3, observers=[tracker]).solve(churn_small)
    client = mlflow.MlflowClient()
    assert client.get_run(tracker.parent_run_id).info.status == "KILLED"
    assert client.get_run(tracker.child_run_ids[1]).info.status == "FINISHED"
    assert mlflow.active_run() is None
    assert client.search_registered_models() == []


def test_optuna_runs_are_reproducible_in_the_store(tracked_search):
    t = tracked_search
    again = AgenticAutoML(OptunaProposer(seed=0), max_iterations=3, patience=5, cv=3,
                          trainers=["linear", "xgboost", "random_forest"], prune=False,
                          ensemble=False, n_jobs=1).solve(t.dataset)
    assert [(a.candidate.trainer, dict(a.params)) for a in again.attempts] == \
        [(a.candidate.trainer, dict(a.params)) for a in t.run.attempts]


def test_an_experiment_kind_the_user_set_is_kept(tracking_uri, churn_frame):
    from mlflow_agentic.frontdoor.api import search

    client = mlflow.MlflowClient()
    client.create_experiment("mine", tags={"mlflow.experimentKind": "genai_development"})
    search(churn_frame, "Churn", experiment="mine", proposer="sequence", trainers=["linear"],
           cv=3, max_iterations=0, register=False, diagnostics=False)
    experiment = client.get_experiment_by_name("mine")
    assert experiment.tags["mlflow.experimentKind"] == "genai_development"
    assert len(client.search_runs([experiment.experiment_id])) >= 2  # the search did run


def test_an_artifact_read_back_leaves_no_copy(tracking_uri, tmp_path):
    """``downloaded`` gives a readable local copy inside the block and removes it after: a
    promotion, a code-mode version or a replay read from the store leaves nothing behind."""
    from mlflow_agentic.tracking.store import downloaded

    source = tmp_path / "rows.csv"
    source.write_text("a,b\n1,2\n")
    client = mlflow.MlflowClient()
    run = client.create_run(client.create_experiment("read-back"))
    client.log_artifact(run.info.run_id, str(source), "holdout")
    before = set(Path(tempfile.gettempdir()).iterdir())
    with downloaded(run_id=run.info.run_id, artifact_path="holdout/rows.csv",
                    purpose="test") as path:
        assert path.read_text() == "a,b\n1,2\n"
        assert any(p.name.startswith("mlflow-agentic-test-") for p in path.parents)
    assert not path.exists()
    assert set(Path(tempfile.gettempdir()).iterdir()) == before
