"""Cross-validation of one pipeline on fixed splits, timing the fitting separately."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, StratifiedKFold

from mlflow_agentic.errors import UserInputError
from mlflow_agentic.metrics import Metric


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


def make_splits(dataset, cv, random_state: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Fixed (train, test) index pairs shared by the baseline and every candidate.

    ``cv`` is a fold count (stratified for classification, shuffled K-fold for regression) or any
    sklearn splitter.
    """
    y = dataset.y
    if isinstance(cv, (int, np.integer)):
        if cv < 2:
            raise UserInputError(f"cv must be at least 2 folds, got {cv}")
        if dataset.n_rows < cv:
            raise UserInputError(f"{dataset.n_rows} rows is fewer than cv={cv} folds; "
                                 f"use --cv {max(2, dataset.n_rows)} or fewer, or more data")
        if dataset.task == "regression":
            splitter = KFold(n_splits=int(cv), shuffle=True, random_state=random_state)
        else:
            counts = y.value_counts()
            if counts.min() < cv:
                raise UserInputError(
                    f"class {counts.idxmin()!r} of target {dataset.target!r} has "
                    f"{int(counts.min())} rows, fewer than cv={cv} folds; lower --cv to "
                    f"{max(2, int(counts.min()))} or drop that class")
            splitter = StratifiedKFold(n_splits=int(cv), shuffle=True, random_state=random_state)
    else:
        splitter = cv
    return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(dataset.X, y)]


def predict_outputs(model, X: pd.DataFrame, metric: Metric, classes: tuple):
    """``(y_pred, proba)`` with proba columns aligned to ``classes`` (absent classes: zeros)."""
    if not metric.needs_proba:
        return np.asarray(model.predict(X)), None
    raw = np.asarray(model.predict_proba(X))
    fitted = list(getattr(model, "classes_", classes))
    if fitted == list(classes):
        return None, raw
    proba = np.zeros((len(X), len(classes)))
    for j, cls in enumerate(fitted):
        proba[:, classes.index(cls)] = raw[:, j]
    return None, proba


def cross_validate(build: Callable[[], object], dataset, splits: Sequence, metric: Metric,
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


def baseline_model(task: str):
    """The trivial model every candidate must beat: class prior, or the training mean."""
    from sklearn.dummy import DummyClassifier, DummyRegressor

    if task == "regression":
        return DummyRegressor(strategy="mean")
    return DummyClassifier(strategy="prior")
