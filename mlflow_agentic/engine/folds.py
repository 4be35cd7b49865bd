"""Fixed CV folds with their preprocessing done once, and the work one fold of one candidate does.

Preprocessing (column coercion, imputation, encoding, scaling) has no hyperparameters: for a
given style it is the same for every candidate. So each fold's preprocessor is fitted once per
style on that fold's training rows only (nothing learned from the rows it is scored on) and its
matrices are shared by every candidate that uses the style. Candidates then fit only their model.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.pipeline import Pipeline

from mlflow_agentic.core.metrics import Metric
from mlflow_agentic.trainers.preprocessing import build_preprocessor


@dataclass(frozen=True)
class FoldMatrices:
    """One fold, preprocessed in one style: train, test and the extra rows (may be None)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    X_extra: np.ndarray | None


class FoldData:
    """The search's fixed splits, with a per-style cache of preprocessed fold matrices.

    ``extra_X``: features of rows to predict with every fold model (the caller scores them; the
    engine never has their labels).
    """

    def __init__(self, dataset, splits, extra_X: pd.DataFrame | None = None) -> None:
        self.dataset = dataset
        self.splits = [(np.asarray(tr), np.asarray(te)) for tr, te in splits]
        self.extra_X = extra_X
        self.y = dataset.y.to_numpy()
        self._cache: dict[str, list[FoldMatrices]] = {}
        self._lock = threading.Lock()
        self.preprocess_seconds = 0.0

    @property
    def n_splits(self) -> int:
        return len(self.splits)

    def matrices(self, style: str) -> list[FoldMatrices]:
        """The folds preprocessed in ``style`` (computed here if ``prepare`` did not)."""
        with self._lock:
            if style not in self._cache:
                start = time.perf_counter()
                self._cache[style] = [preprocess_fold(self.dataset, style, tr, te, self.extra_X)
                                      for tr, te in self.splits]
                self.preprocess_seconds += time.perf_counter() - start
            return self._cache[style]

    def prepare(self, styles, pool) -> None:
        """Preprocess the missing ``styles``, every (style, fold) a task on ``pool``."""
        missing = [s for s in dict.fromkeys(styles) if s not in self._cache]
        if not missing:
            return
        start = time.perf_counter()
        jobs = [(s, k) for s in missing for k in range(self.n_splits)]
        futures = [pool.submit(preprocess_fold, self.dataset, s, *self.splits[k], self.extra_X)
                   for s, k in jobs]
        results: dict[tuple[str, int], FoldMatrices] = {}
        for i, future in pool.in_order(futures):
            results[jobs[i]] = future.result()
        with self._lock:
            for s in missing:
                self._cache[s] = [results[(s, k)] for k in range(self.n_splits)]
        self.preprocess_seconds += time.perf_counter() - start


def preprocess_fold(dataset, style: str, train, test, extra_X=None) -> FoldMatrices:
    """Fit the ``style`` preprocessing on the fold's training rows; transform its rows (a worker
    task: the fitted preprocessor stays in the worker, the matrices come back)."""
    from mlflow_agentic.trainers.transforms import InputColumns

    X, y = dataset.X, dataset.y.to_numpy()
    steps = Pipeline([("inputs", InputColumns()),
                      ("preprocess", build_preprocessor(dataset, style))])
    X_train = _dense(steps.fit_transform(X.iloc[train], y[train]))
    extra = None if extra_X is None else _dense(steps.transform(extra_X))
    return FoldMatrices(X_train, y[train], _dense(steps.transform(X.iloc[test])), extra)


def _dense(matrix) -> np.ndarray:
    if hasattr(matrix, "toarray"):
        matrix = matrix.toarray()
    return np.ascontiguousarray(np.asarray(matrix, dtype=float))


@dataclass(frozen=True)
class FoldOutput:
    """What one fold fit returns: timings and predictions (never the model: it stays in the
    worker, so a 70 MB forest is not shipped back for each fold)."""

    fit_seconds: float
    """Fitting and predicting (the fold's test rows and the extra rows): model work."""
    test: np.ndarray
    extra: np.ndarray | None


def fit_fold(model, fold: FoldMatrices, classes: tuple, classification: bool) -> FoldOutput:
    """Fit ``model`` on the fold's training matrix; predict its test rows and the extra rows.

    Runs in a worker process (or in-process with one job). Classification returns class
    probabilities aligned to ``classes``; regression returns predictions.
    """
    start = time.perf_counter()
    model.fit(fold.X_train, fold.y_train)
    test = model_output(model, fold.X_test, classes, classification)
    extra = None if fold.X_extra is None else model_output(model, fold.X_extra, classes,
                                                           classification)
    return FoldOutput(time.perf_counter() - start, test, extra)


def model_output(model, X, classes: tuple, classification: bool) -> np.ndarray:
    """Probabilities aligned to ``classes`` (absent classes: zeros), or regression predictions.
    A classifier without ``predict_proba`` gives one-hot rows of its labels."""
    if not classification:
        return np.asarray(model.predict(X), dtype=float)
    if not hasattr(model, "predict_proba"):
        labels = np.asarray(model.predict(X))
        return np.column_stack([(labels == c).astype(float) for c in classes])
    raw = np.asarray(model.predict_proba(X), dtype=float)
    fitted = list(getattr(model, "classes_", classes))
    if fitted == list(classes):
        return raw
    proba = np.zeros((raw.shape[0], len(classes)))
    for j, cls in enumerate(fitted):
        proba[:, list(classes).index(cls)] = raw[:, j]
    return proba


def score_output(metric: Metric, y_true, output: np.ndarray, classes: tuple) -> float:
    """The metric from a model output: labels are the most probable class."""
    y_true = np.asarray(y_true)
    if output.ndim == 1:
        return metric.score(y_true, output, None, classes)
    labels = np.asarray(classes, dtype=object)[np.argmax(output, axis=1)]
    if y_true.dtype != object:
        labels = labels.astype(y_true.dtype)
    return metric.score(y_true, labels, output, classes)
