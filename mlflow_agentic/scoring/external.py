"""Judge any model's predictions on given rows the way the search judges its own: the metric,
the trivial baseline on the same rows, the verifier's verdict and the leakage findings of the
data. Used by the ``agentic`` MLflow model evaluator and the promotion gate; no MLflow here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.metrics import Metric, resolve_metric
from mlflow_agentic.core.types import Verdict, is_regression
from mlflow_agentic.verify import DeterministicVerifier, leakage

MODEL_TYPES = {"classifier": ("binary", "multiclass"), "regressor": ("regression",)}


@dataclass
class ExternalEvaluation:
    metric: str
    greater_is_better: bool
    score: float
    baseline: float
    verdict: Verdict
    findings: list = field(default_factory=list)
    n_rows: int = 0
    task: str = ""

    @property
    def critical(self) -> list:
        return [f for f in self.findings if f.severity == "critical"]

    def metrics(self, prefix: str = "agentic_") -> dict[str, float]:
        return {f"{prefix}{self.metric}": self.score,
                f"{prefix}baseline_{self.metric}": self.baseline,
                f"{prefix}verified": float(self.verdict.valid),
                f"{prefix}quarantined": float(self.verdict.quarantined),
                f"{prefix}findings_critical": float(len(self.critical)),
                f"{prefix}findings_total": float(len(self.findings))}

    def to_dict(self) -> dict:
        return {"metric": self.metric, "score": self.score, "baseline": self.baseline,
                "verified": self.verdict.valid, "quarantined": self.verdict.quarantined,
                "reason": self.verdict.reason, "task": self.task, "n_rows": self.n_rows,
                "findings": [f.to_dict() for f in self.findings]}


def task_of(model_type: str, y: pd.Series) -> str:
    if model_type not in MODEL_TYPES:
        raise UserInputError(f"model_type {model_type!r} is not supported by the agentic "
                             f"evaluator; use one of {', '.join(MODEL_TYPES)}")
    if model_type == "regressor":
        return "regression"
    return "binary" if y.nunique(dropna=True) <= 2 else "multiclass"


def evaluate_predictions(features: pd.DataFrame, y: pd.Series, *, model_type: str,
                         y_pred: Any = None, proba: np.ndarray | None = None,
                         classes: tuple = (), metric: str | None = None,
                         margin: float = 0.01) -> ExternalEvaluation:
    """Score predictions (``proba`` columns in ``classes`` order when given) against ``y``."""
    from mlflow_agentic.data import Dataset

    y = pd.Series(y).reset_index(drop=True)
    task = task_of(model_type, y)
    chosen = resolve_metric(metric, task)
    if chosen.needs_proba and proba is None:  # a model without probabilities: judge labels
        chosen = resolve_metric("r2" if is_regression(task) else "balanced_accuracy", task)
    classes = tuple(classes) if len(classes) else tuple(sorted(y.dropna().unique()))
    score = float(chosen.score(y.to_numpy(), None if y_pred is None else np.asarray(y_pred),
                               None if proba is None else np.asarray(proba), classes))
    baseline = _baseline(chosen, y, classes, task)
    frame = features.reset_index(drop=True).copy()
    target = "__target__" if y.name in frame.columns or y.name is None else str(y.name)
    frame[target] = y
    dataset = Dataset.from_frame(frame, target=target, task=task, name="evaluation")
    findings = (leakage.check_single_feature(dataset) + leakage.check_missing_separation(dataset)
                + leakage.check_imbalance(dataset) + leakage.check_id_columns(dataset)
                + leakage.check_near_duplicates(dataset))
    too_good = leakage.check_too_good(chosen.name, score, baseline)
    if too_good is not None:
        findings.append(too_good)
    # the verifier also quarantines a too-good score
    verdict = DeterministicVerifier(margin).verify(score, baseline,
                                                   greater_is_better=chosen.greater_is_better,
                                                   bounded=chosen.bounded, metric=chosen.name)
    return ExternalEvaluation(chosen.name, chosen.greater_is_better, score, baseline, verdict,
                              findings, len(y), task)


def _baseline(metric: Metric, y: pd.Series, classes: tuple, task: str) -> float:
    """The trivial model fitted and scored on these same rows (the class prior, or the mean)."""
    from mlflow_agentic.engine.evaluate.evaluation import baseline_model, predict_outputs

    X = pd.DataFrame({"constant": np.zeros(len(y))})
    model = baseline_model(task).fit(X, y)
    y_pred, proba = predict_outputs(model, X, metric, classes)
    value = metric.score(y.to_numpy(), y_pred, proba, classes)
    return float(value) if math.isfinite(value) else float("nan")
