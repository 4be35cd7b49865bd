"""Metrics know their direction and task; the verifier's arithmetic and wording."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.metrics import METRICS, resolve_metric
from mlflow_agentic.verify import DeterministicVerifier


def test_defaults_and_directions():
    assert resolve_metric(None, "binary").name == "roc_auc"
    assert resolve_metric(None, "multiclass").name == "roc_auc_ovr"
    assert resolve_metric(None, "regression").name == "rmse"
    assert {m for m, v in METRICS.items() if not v.greater_is_better} == {"rmse", "mae",
                                                                          "log_loss"}


@pytest.mark.parametrize("name, task, fragment", [
    ("rmse", "binary", "metric 'rmse' does not fit a binary task"),
    ("roc_auc", "regression", "Metrics for regression: rmse, mae, r2"),
    ("auc", "binary", "unknown metric 'auc'"),
])
def test_metric_errors(name, task, fragment):
    with pytest.raises(UserInputError) as err:
        resolve_metric(name, task)
    assert fragment in str(err.value)


def test_binary_roc_auc_by_ranks_is_scikit_learns_number_and_errors():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    y = np.where(rng.random(400) < 0.2, "yes", "no").astype(object)
    p = np.round(rng.random(400), 1)  # ties, which count a half
    proba = np.column_stack([1 - p, p])
    auc = METRICS["roc_auc"].score(y, proba=proba, classes=("no", "yes"))
    assert auc == pytest.approx(roc_auc_score(y == "yes", p), abs=1e-12)

    def outcome(f):  # a value or an error's text, as repr (NaN equals NaN)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return repr(f())
            except ValueError as exc:
                return str(exc)

    one_class = np.array(["no"] * 4)  # scikit-learn's own answer: NaN (1.9) or an error
    assert outcome(lambda: METRICS["roc_auc"].score(one_class, proba=proba[:4],
                                                    classes=("no", "yes"))) == \
        outcome(lambda: float(roc_auc_score(one_class == "yes", p[:4])))
    proba[0, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        METRICS["roc_auc"].score(y, proba=proba, classes=("no", "yes"))



def test_one_rank_formula_serves_the_multiclass_metric_and_the_ensembles_blends():
    """The metric and the greedy ensemble's utility rank with one formula: the same number as
    scikit-learn's one-vs-rest AUC, bit for bit between the two (a greedy selection's ties
    must not flip), and one column's AUC the same alone as among others."""
    from sklearn.metrics import roc_auc_score

    from mlflow_agentic.core.metrics import rank_auc, rank_aucs
    from mlflow_agentic.engine.after.ensemble import utility_of

    rng = np.random.default_rng(5)
    classes = ("a", "b", "c", "d")
    y = rng.choice(np.array(classes, dtype=object), 600, p=[0.5, 0.3, 0.15, 0.05])
    raw = np.round(rng.random((600, 4)), 1) + 1e-3  # ties, which count a half
    proba = raw / raw.sum(axis=1, keepdims=True)
    metric = METRICS["roc_auc_ovr"]
    auc = metric.score(y, proba=proba, classes=classes)
    assert auc == pytest.approx(roc_auc_score(y, proba, multi_class="ovr",
                                              labels=list(classes)), abs=1e-12)
    assert utility_of(metric, y, classes)(proba) == auc
    positive = y[:, None] == np.array(classes, dtype=object)[None, :]
    together = rank_aucs(proba, positive)
    assert [rank_auc(proba[:, j], positive[:, j]) for j in range(4)] == list(together)

def test_verifier_margin_and_reason():
    v = DeterministicVerifier(margin=0.01)
    assert v.verify(0.8, 0.5).valid
    verdict = v.verify(0.5050, 0.5)
    assert not verdict.valid
    assert verdict.reason == ("does not beat the trivial baseline (0.5050 <= 0.5000 + margin "
                              "0.0100)")
    assert not v.verify(math.nan, 0.5).valid and "not finite" in v.verify(math.inf, 0.5).reason


def test_unbounded_metrics_take_a_relative_margin():
    v = DeterministicVerifier(margin=0.01)
    # rmse baseline 100: must be below 99
    assert v.verify(98.0, 100.0, greater_is_better=False, bounded=False).valid
    verdict = v.verify(99.5, 100.0, greater_is_better=False, bounded=False)
    assert not verdict.valid and ">= 100.0000 - margin 1% of 1.0000" in verdict.reason


def test_a_near_perfect_score_counts_only_when_earned_and_asked_once_per_family():
    asked = []

    def earned(by):
        asked.append([trainer for trainer, _ in by])
        return "a linear model without the suspect columns scores 0.999 too" if (
            ["linear"] in asked[-1:]) else None

    v = DeterministicVerifier(margin=0.01, earned=earned)
    linear = [("linear", {"C": 1.0})]
    first = v.verify(0.999, 0.5, metric="roc_auc", by=linear)
    second = v.verify(0.998, 0.5, metric="roc_auc", by=[("linear", {"C": 10.0})])
    assert first.valid and second.valid and not first.quarantined
    assert "near-perfect and earned: a linear model without the suspect columns" in first.reason
    assert asked == [["linear"]]  # the family, once
    assert v.verify(0.999, 0.5, metric="roc_auc", by=[("xgboost", {})]).quarantined
    assert asked == [["linear"], ["xgboost"]]
    assert v.verify(0.8, 0.5, metric="roc_auc").reason.startswith("beats")
    refused = DeterministicVerifier(margin=0.01, earned=lambda by: None)
    assert refused.verify(0.999, 0.5, metric="roc_auc").quarantined
    assert DeterministicVerifier(margin=0.01).verify(0.999, 0.5, metric="roc_auc").quarantined
