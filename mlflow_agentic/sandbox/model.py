"""The selected code-mode model as the host holds it: bytes, never a loaded object.

``SandboxedModel`` keeps the candidate's code, the pickle of its pipeline as the sandbox refit
it (the host never unpickles it: unpickling runs the candidate's classes), and the engine's own
fitted input step. ``predict`` and ``predict_proba`` send the input step's features (no labels)
to a fresh sandbox container and read back numbers; the same rows are predicted once. So the
holdout scoring, the diagnostics and the model's signature all run the candidate's code in the
sandbox, and registration logs the bytes as artifacts.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from mlflow_agentic.core.labels import labels_of
from mlflow_agentic.core.types import is_regression
from mlflow_agentic.sandbox.job import SandboxFailed, SandboxJob

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

    from mlflow_agentic.sandbox.runners import Sandbox

CACHED_PREDICTIONS = 8


class SandboxedModel:
    """``predict``/``predict_proba`` run in ``sandbox``; ``inputs``: the fitted input step
    (``Pipeline(inputs, features)``, the engine's code) that turns raw columns into the
    candidate's features, on the host."""

    runs_generated_code = True
    """What the tracking side looks for: log the bytes, never this object."""

    def __init__(self, sandbox: Sandbox, code: str, model_bytes: bytes, inputs: Pipeline,
                 task: str,
                 classes: tuple = (), features: list[str] | None = None) -> None:
        self.sandbox = sandbox
        self.code = code
        self.model_bytes = model_bytes
        self.inputs = inputs
        self.task = task
        self.classes = tuple(classes)
        self.features = list(features or [])
        self.seconds = 0.0
        """Container seconds spent predicting so far."""
        self.containers = 0
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def named_steps(self) -> dict:
        """The input step's steps (what the serving signature reads: optional columns)."""
        return dict(self.inputs.named_steps)

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(self.classes)

    def remember(self, X: pd.DataFrame, predictions: np.ndarray) -> None:
        """Predictions of ``X`` already made in the sandbox (the refit's own rows)."""
        self._store(_digest(self.inputs.transform(X)), predictions)

    def output(self, X: pd.DataFrame) -> np.ndarray:
        """Class probabilities (``classes`` order) or regression values, made in the sandbox."""
        features = self.inputs.transform(X)
        key = _digest(features)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        job = SandboxJob(self.code, self.task, self.classes, model_bytes=self.model_bytes,
                         rows=features)
        result = self.sandbox.run(job)
        self.seconds += result.seconds
        self.containers += 1
        if not result.ok or result.predictions is None:
            raise SandboxFailed(f"predicting {len(features)} rows in the sandbox failed at "
                                f"{result.stage}: {result.error or 'no predictions came back'}")
        self._store(key, result.predictions)
        return result.predictions

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        if is_regression(self.task):
            raise AttributeError("a regressor has no predict_proba")
        return self.output(X)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        out = self.output(X)
        if is_regression(self.task):
            return out
        return labels_of(out, self.classes)

    def score(self, X: pd.DataFrame, y: Any, sample_weight: Any = None) -> float:
        """scikit-learn's default score (accuracy, or R2 for a regressor), from sandboxed
        predictions: what MLflow's evaluator asks a raw model for."""
        from sklearn.metrics import accuracy_score, r2_score

        predicted = self.predict(X)
        if is_regression(self.task):
            return float(r2_score(y, predicted, sample_weight=sample_weight))
        return float(accuracy_score(np.asarray(y).astype(str), predicted.astype(str),
                                    sample_weight=sample_weight))

    def _store(self, key: str, predictions: np.ndarray) -> None:
        self._cache[key] = predictions
        while len(self._cache) > CACHED_PREDICTIONS:
            self._cache.popitem(last=False)


def _digest(frame: pd.DataFrame) -> str:
    """The rows' content, whatever their index: one prediction per distinct table."""
    hashed = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    digest = hashlib.sha256(hashed.tobytes())
    digest.update(repr(list(frame.columns)).encode())
    return digest.hexdigest()
