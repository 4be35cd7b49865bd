"""A stacking layer (Wolpert 1992; Breiman 1996) over out-of-fold predictions: one more
candidate beside the greedy ensemble, selected only when its nested CV score is the better.

Classification: a logistic regression on the members' log-odds (binary) or log-probabilities
(multiclass). Regression: least squares with non-negative coefficients on the members'
predictions (Breiman's stacked regressions: an interpolation of members, usually sparse). The CV
score is nested as the ensemble's is: for each fold the stacker is fitted on the other folds'
rows only and scored on the fold. The final stacker uses every row (at most ``MAX_FIT_ROWS`` of
them, a seeded sample: a linear model of a few columns needs no more).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mlflow_agentic.core.metrics import Metric
from mlflow_agentic.core.types import is_regression
from mlflow_agentic.engine.after.ensemble import NestedScore
from mlflow_agentic.engine.evaluate.folds import score_output
from mlflow_agentic.trainers.stacked import stack_features, stack_output

if TYPE_CHECKING:
    from mlflow_agentic.engine.evaluate.cv import Splits

MAX_FIT_ROWS = 100_000
C = 1.0
"""The logistic stacker's inverse regularisation (scikit-learn's default)."""


@dataclass(frozen=True)
class StackChoice(NestedScore):
    members: tuple[int, ...]
    """Attempt indices the stacker reads (regression: those with a non-zero coefficient)."""
    coef: tuple[tuple[float, ...], ...]
    """One row per output column the stacker makes (binary and regression: one)."""
    intercept: tuple[float, ...]
    fold_scores: tuple[float, ...]
    """Nested CV: each fold scored with a stacker fitted without its rows."""
    method: str
    """What the stacker is, for the attempt's description."""


def fit_stacker(features: np.ndarray, y: np.ndarray, task: str, n_classes: int,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """``(coef, intercept)`` fitted on ``features`` and ``y`` (class positions 0..k-1 for a
    classifier); None when some class is absent from ``y`` (no stacker can be told about it)."""
    if len(y) > MAX_FIT_ROWS:
        rows = np.random.default_rng(seed).choice(len(y), MAX_FIT_ROWS, replace=False)
        features, y = features[rows], y[rows]
    if is_regression(task):
        from sklearn.linear_model import LinearRegression

        model = LinearRegression(positive=True).fit(features, y)
        return np.atleast_2d(model.coef_), np.atleast_1d(model.intercept_)
    if len(np.unique(y)) < n_classes:
        return None
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, max_iter=1000).fit(features, y)
    return model.coef_, model.intercept_


def select_stack(candidates: Sequence[tuple[int, np.ndarray]], y: np.ndarray, splits: Splits,
                 metric: Metric,
                 classes: tuple, task: str, seed: int = 0) -> StackChoice | None:
    """A stacker over ``candidates`` (attempt index, OOF output) with its nested CV score; None
    with fewer than two candidates or when a fold lacks a class."""
    if len(candidates) < 2:
        return None
    y = np.asarray(y)
    if is_regression(task):
        target = y.astype(float)
    else:
        position = {c: k for k, c in enumerate(classes)}
        target = np.array([position[v] for v in y.tolist()])
    features = stack_features([o for _, o in candidates], task)
    all_rows = np.arange(len(y))
    tests = [test for _, test in splits]
    stackers = [fit_stacker(features[rows], target[rows], task, len(classes), seed)
                for rows in (np.setdiff1d(all_rows, test) for test in tests)]
    ready = [fitted for fitted in stackers if fitted is not None]
    if len(ready) < len(stackers):  # before scoring any fold
        return None
    fold_scores = [score_output(metric, y[test], stack_output(features[test], *fitted, task),
                                classes) for test, fitted in zip(tests, ready, strict=True)]
    fitted = fit_stacker(features, target, task, len(classes), seed)
    if fitted is None:
        return None
    coef, intercept = fitted
    indices = [i for i, _ in candidates]
    if is_regression(task):  # members the non-negative fit gave no weight are not served
        kept = [j for j in range(len(indices)) if coef[0, j] > 0] or list(range(len(indices)))
        indices, coef = [indices[j] for j in kept], coef[:, kept]
    return StackChoice(tuple(indices), tuple(tuple(_short(c) for c in row) for row in coef),
                       tuple(_short(b) for b in intercept), tuple(float(s) for s in fold_scores),
                       "non-negative least squares" if is_regression(task) else
                       "a logistic regression")


def _short(value: float) -> float:
    """Six significant digits: readable as a param, and what is served is what is recorded."""
    return float(f"{value:.6g}")
