"""A scripted trainer whose CV score is set by one parameter, for pinning loop semantics.

``quality`` in [0, 1] mixes the informative column with a noise column: 0 is exactly chance
(a constant score, AUC 0.5, rejected by the verifier), 1 is the signal alone. ``explode=True``
raises inside fit.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from mlflow_agentic.core.types import SolutionCandidate
from mlflow_agentic.trainers import CategoricalParam, FloatParam, Trainer


class MixClassifier(ClassifierMixin, BaseEstimator):
    def __init__(self, quality=1.0, explode=False):
        self.quality = quality
        self.explode = explode

    def fit(self, X, y):
        if self.explode:
            raise RuntimeError("scripted explosion in fit")
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        X = np.asarray(X, dtype=float)
        if self.quality == 0:  # exactly chance: a constant score (AUC 0.5)
            z = np.zeros(len(X))
        else:
            z = self.quality * X[:, 0] + (1 - self.quality) * X[:, 1]
        p = 1 / (1 + np.exp(-z))
        return np.column_stack([1 - p, p])

    def predict(self, X):
        return self.classes_[(self.predict_proba(X)[:, 1] > 0.5).astype(int)]


SCRIPTED = Trainer(
    "scripted",
    build_model=lambda task, p, seed: MixClassifier(p["quality"], p["explode"]),
    space=lambda ds: {"quality": FloatParam(0.0, 1.0), "explode": CategoricalParam((False, True))},
    defaults=lambda ds: {"quality": 1.0, "explode": False},
    tasks=frozenset({"binary"}),
    preprocessing="native",
)


def q(quality: float, **extra) -> SolutionCandidate:
    return SolutionCandidate("scripted", {"quality": quality, **extra}, f"quality {quality}")


class SleepyClassifier(MixClassifier):
    """A fit that takes ``seconds``: a fold on a big file."""

    def __init__(self, seconds=0.0):
        super().__init__()
        self.seconds = seconds

    def fit(self, X, y):
        import time

        time.sleep(self.seconds)
        return super().fit(X, y)


SLEEPY = Trainer(
    "sleepy",
    build_model=lambda task, p, seed: SleepyClassifier(p["seconds"]),
    space=lambda ds: {"seconds": FloatParam(0.0, 600.0)},
    defaults=lambda ds: {"seconds": 0.0},
    tasks=frozenset({"binary"}),
    preprocessing="native",
)
