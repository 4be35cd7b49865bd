"""Cross-validation of one pipeline on fixed splits, timing the fitting separately."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.dummy import DummyClassifier, DummyRegressor

from mlflow_agentic.core.metrics import Metric
from mlflow_agentic.core.types import is_regression
from mlflow_agentic.engine.evaluate.folds import model_output

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset


@dataclass(frozen=True)
class CVResult:
    fold_scores: tuple[float, ...]
    fit_seconds: float

    @property
    def mean(self) -> float:
        return float(np.mean(self.fold_scores))

    @property
    def std(self) -> float:
        return float(np.std(self.fold_scores))


def predict_outputs(model: Any, X: pd.DataFrame, metric: Metric,
                    classes: tuple) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(y_pred, proba)`` with proba columns aligned to ``classes`` (absent classes: zeros)."""
    if not metric.needs_proba:
        return np.asarray(model.predict(X)), None
    return None, model_output(model, X, tuple(classes), classification=True)


def cross_validate(build: Callable[[], Any], dataset: Dataset, splits: Sequence, metric: Metric,
                   ) -> CVResult:
    """Fit ``build()`` on each train fold, score on its test fold. Exceptions propagate."""
    X, y = dataset.X, dataset.y
    scores, fit_seconds = [], 0.0
    for train, test in splits:
        model = build()
        start = time.perf_counter()
        model.fit(X.iloc[train], y.iloc[train])
        y_pred, proba = predict_outputs(model, X.iloc[test], metric, dataset.classes)
        fit_seconds += time.perf_counter() - start
        scores.append(metric.score(y.iloc[test].to_numpy(), y_pred, proba, dataset.classes))
    return CVResult(tuple(float(s) for s in scores), fit_seconds)


def baseline_model(task: str) -> DummyClassifier | DummyRegressor:
    """The trivial model every candidate must beat: class prior, or the training mean."""
    if is_regression(task):
        return DummyRegressor(strategy="mean")
    return DummyClassifier(strategy="prior")
