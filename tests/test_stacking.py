"""The stacking layer: its CV score is nested (the stacker never fitted on the fold it is scored
on), it reaches what a weighted average cannot (a rescaled member), the served stack predicts
what was scored, and a stack that wins is registered and serves without mlflow-agentic."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold, StratifiedKFold

from mlflow_agentic import SequenceProposer, SolutionCandidate
from mlflow_agentic.core.metrics import METRICS
from mlflow_agentic.core.types import STACK
from mlflow_agentic.data import Dataset
from mlflow_agentic.engine import AgenticAutoML, StackStep
from mlflow_agentic.engine.after.ensemble import select_ensemble
from mlflow_agentic.engine.after.refit import bagged
from mlflow_agentic.engine.after.stacking import fit_stacker, select_stack
from mlflow_agentic.trainers.stacked import StackedEnsemble, stack_features, stack_output
from tests.conftest import predicted_without_package

CLASSES = ("N", "Y")


def binary_outputs(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.4, "Y", "N")
    signal = (y == "Y").astype(float)
    outputs = []
    for noise in (0.8, 0.9, 1.0):
        p = 1 / (1 + np.exp(-(signal + rng.normal(0, noise, n))))
        outputs.append(np.column_stack([1 - p, p]))
    splits = list(StratifiedKFold(5, shuffle=True, random_state=0).split(np.zeros(n), y))
    return y, outputs, splits


def test_the_stack_cv_score_uses_a_stacker_fitted_without_the_scored_fold():
    y, outputs, splits = binary_outputs(600)
    choice = select_stack(list(enumerate(outputs, start=1)), y, splits, METRICS["roc_auc"],
                          CLASSES, "binary")
    assert choice is not None and choice.members == (1, 2, 3)
    features = stack_features(outputs, "binary")
    target = (y == "Y").astype(int)
    for (_, test), score in zip(splits, choice.fold_scores, strict=True):
        rows = np.setdiff1d(np.arange(len(y)), test)
        coef, intercept = fit_stacker(features[rows], target[rows], "binary", 2)
        expected = roc_auc_score(target[test],
                                 stack_output(features[test], coef, intercept, "binary")[:, 1])
        assert score == pytest.approx(expected)
    everything = fit_stacker(features, target, "binary", 2)
    assert choice.fold_scores != pytest.approx([roc_auc_score(
        target[test], stack_output(features[test], *everything, "binary")[:, 1])
        for _, test in splits]), "precondition: a stacker fitted on all rows scores otherwise"


def test_a_stack_rescales_a_shrunk_member_which_an_average_cannot():
    rng = np.random.default_rng(0)
    n = 500
    y = rng.normal(0, 10, n)
    shrunk = 0.2 * y + rng.normal(0, 0.5, n)  # a heavily regularised model's predictions
    noisy = y + rng.normal(0, 8, n)
    splits = list(KFold(5, shuffle=True, random_state=0).split(np.zeros(n)))
    rmse = METRICS["rmse"]
    candidates = [(1, shrunk), (2, noisy)]
    stack = select_stack(candidates, y, splits, rmse, (), "regression")
    ensemble = select_ensemble(candidates, y, splits, rmse, ())
    best_average = min(ensemble.score if ensemble else np.inf,
                       *(rmse.score(y, o, None, ()) for _, o in candidates))
    assert stack.score < 0.5 * best_average
    assert stack.coef[0][0] > 3  # about 1 / 0.2: the shrinkage undone
    assert all(c > 0 for c in stack.coef[0]) and stack.method == "non-negative least squares"


def test_a_multiclass_stack_gives_probabilities_and_a_missing_class_gives_none():
    rng = np.random.default_rng(2)
    n = 400
    y = rng.choice(["a", "b", "c"], n)
    onehot = np.column_stack([(y == c).astype(float) for c in "abc"])
    outputs = [(onehot + rng.random((n, 3)) * k) for k in (1.0, 2.0)]
    outputs = [o / o.sum(axis=1, keepdims=True) for o in outputs]
    splits = list(StratifiedKFold(4, shuffle=True, random_state=0).split(np.zeros(n), y))
    metric = METRICS["roc_auc_ovr"]
    choice = select_stack([(1, outputs[0]), (2, outputs[1])], y, splits, metric, ("a", "b", "c"),
                          "multiclass")
    assert choice is not None and len(choice.coef) == 3 and len(choice.coef[0]) == 6
    proba = stack_output(stack_features(outputs, "multiclass"), np.array(choice.coef),
                         np.array(choice.intercept), "multiclass")
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    y_rare = y.copy()
    y_rare[0] = "d"  # one row of a fourth class: some fold's stacker never sees it
    splits = list(KFold(4, shuffle=True, random_state=0).split(np.zeros(n)))
    rare = [np.column_stack([o, np.full(n, 0.01)]) for o in outputs]
    assert select_stack([(1, rare[0]), (2, rare[1])], y_rare, splits, metric,
                        ("a", "b", "c", "d"), "multiclass") is None


@pytest.mark.search
@pytest.mark.slow  # over ~3 s
def test_a_bagged_stack_serves_what_the_holdout_was_scored_with(churn_small):
    extra = churn_small.X.iloc[:60]
    candidates = [SolutionCandidate("hist_gradient_boosting", {"max_iter": 40}),
                  SolutionCandidate("linear", {"C": 1.0})]
    automl = AgenticAutoML(SequenceProposer(candidates), cv=3, n_jobs=2,
                           trainers=["hist_gradient_boosting", "linear"], extra_X=extra,
                           after_loop=[StackStep()])
    run = automl.solve(churn_small)
    stack = next(a for a in run.attempts if a.candidate.trainer == STACK)
    assert stack.phase == "ensemble" and stack.verdict.valid
    served = bagged(stack, run.attempts, automl.runner.folds, churn_small)
    assert isinstance(served, StackedEnsemble) and len(served.estimators) == 2
    scored = stack_output(stack_features([automl.extras[i] for i in stack.params["members"]],
                                         "binary"),
                          np.array(stack.params["coef"]), np.array(stack.params["intercept"]),
                          "binary")
    np.testing.assert_allclose(served.predict_proba(extra), scored, atol=1e-9)
    assert set(served.predict(extra)) <= set(churn_small.classes)


def shrunk_regression(n: int = 400) -> Dataset:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n),
                          "x3": rng.normal(size=n)})
    frame["y"] = 5 * frame.x1 + 3 * frame.x2 + rng.normal(0, 0.5, n)
    return Dataset.from_frame(frame, target="y", name="shrunk")


@pytest.mark.slow
def test_a_winning_stack_is_registered_and_serves_without_mlflow_agentic(tracking_uri):
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    dataset = shrunk_regression()
    tracker = MlflowTracker(register_name="stacked")
    result = run_search(dataset, lambda: SequenceProposer([  # two ridges shrunk hard
        SolutionCandidate("linear", {"alpha": 1000.0}),
        SolutionCandidate("linear", {"alpha": 300.0})]), cv=3, patience=5, tracker=tracker,
        stack=True)
    best = result.run.best_attempt
    assert best.candidate.trainer == STACK, "precondition: the stack undoes the shrinkage"
    scores = result.holdout.scores
    assert scores[best.index].holdout < 0.5 * min(scores[i].holdout
                                                   for i in best.params["members"])
    child = mlflow.MlflowClient().get_run(tracker.child_run_ids[best.index])
    assert child.data.tags["trainer"] == STACK and "holdout_rmse" in child.data.metrics
    rows = dataset.X.head(20)
    served = predicted_without_package(tracking_uri, "models:/stacked@challenger", rows)
    np.testing.assert_allclose(served, result.run.model.predict(rows))
