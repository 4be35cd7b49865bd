"""A stacked ensemble as served: fitted members and a linear model over their outputs.

The engine (``engine.stacking``) chooses the linear model on out-of-fold predictions; its
coefficients are params of the attempt, so the served model is rebuilt from them and the
members' refit (or fold-averaged) pipelines. The meta-features are the same functions here and
there: what was scored in CV is what is served.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mlflow_agentic.core.labels import labels_of
from mlflow_agentic.trainers.transforms import WeightedEnsemble

EPS = 1e-6
"""Probabilities are clipped to [EPS, 1 - EPS] before their logarithm."""


def stack_features(outputs: Sequence[np.ndarray], task: str) -> np.ndarray:
    """The stacker's inputs: each member's prediction (regression), its positive class's
    log-odds (binary) or its classes' log-probabilities (multiclass), side by side."""
    columns = []
    for output in outputs:
        output = np.asarray(output, dtype=float)
        if task == "regression":
            columns.append(output.reshape(-1, 1))
            continue
        p = np.clip(output, EPS, 1 - EPS)
        columns.append(np.log(p[:, 1] / (1 - p[:, 1])).reshape(-1, 1) if task == "binary"
                       else np.log(p))
    return np.hstack(columns)


def stack_output(features: np.ndarray, coef: np.ndarray, intercept: np.ndarray,
                 task: str) -> np.ndarray:
    """The stacker's output: a prediction (regression) or class probabilities, one column per
    class (binary: a logistic, multiclass: a softmax over ``coef``'s rows)."""
    z = features @ np.atleast_2d(coef).T + np.asarray(intercept, dtype=float)
    if task == "regression":
        return z[:, 0]
    if task == "binary":
        positive = 1.0 / (1.0 + np.exp(-z[:, 0]))
        return np.column_stack([1.0 - positive, positive])
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class StackedEnsemble(WeightedEnsemble):
    """Fitted pipelines combined by a fitted linear stacker (``coef``, ``intercept``) over their
    outputs, as ``stack_features`` and ``stack_output`` compute them."""

    def __init__(self, estimators: Any = None, coef: Any = None, intercept: Any = None,
                 classes: Any = None, task: str = "regression") -> None:
        self.estimators = estimators
        self.coef = coef
        self.intercept = intercept
        self.classes = classes
        self.task = task

    def _outputs(self, X: Any) -> list[np.ndarray]:
        if self.task == "regression":
            return [np.asarray(m.predict(X), dtype=float) for m in self.estimators]
        return [self._aligned_proba(m, X) for m in self.estimators]

    def _combined(self, X: Any) -> np.ndarray:
        return stack_output(stack_features(self._outputs(X), self.task),
                            np.asarray(self.coef, dtype=float),
                            np.asarray(self.intercept, dtype=float), self.task)

    def predict_proba(self, X: Any) -> np.ndarray:
        return self._combined(X)

    def predict(self, X: Any) -> np.ndarray:
        if self.task == "regression":
            return self._combined(X)
        return labels_of(self._combined(X), self.classes)
