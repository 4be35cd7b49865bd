"""The registered model as served: the fitted pipeline behind MLflow's pyfunc, with one
inference parameter, ``output``.

``output="label"`` (the default) returns one prediction per row, as ``sklearn``'s ``predict``;
``output="probabilities"`` (classifiers) returns per row the label and one
``probability_<class>`` column per class. A REST caller sends it as
``{"dataframe_split": ..., "params": {"output": "probabilities"}}``; in Python,
``model.predict(frame, params={"output": "probabilities"})``.

This module is pickled with the model (by value): a served model does not need mlflow-agentic.
Its annotations are evaluated (no ``from __future__ import annotations``): MLflow reads the
``pd.DataFrame`` hint of ``predict`` and skips type-hint validation (the signature validates).
"""

from typing import Any

import numpy as np
import pandas as pd
from mlflow.pyfunc import PythonModel

OUTPUTS = ("label", "probabilities")
ACCEPT_ENV = "MLFLOW_AGENTIC_ACCEPT_GENERATED_CODE"
"""Set to 1 where a code-mode model may be loaded (its container): else loading refuses."""


class ServedModel(PythonModel):
    """``model``: the fitted pipeline (or ensemble). ``classes``: its classes for a classifier,
    None for a regressor."""

    def __init__(self, model: Any, classes: list | None = None) -> None:
        self.model = model
        self.classes = None if classes is None else list(classes)

    def predict(self, context, model_input: pd.DataFrame,  # noqa: ANN001, ANN201
                params: dict | None = None):  # MLflow reads predict's hints: kept as it knows them
        output = (params or {}).get("output") or "label"
        if output not in OUTPUTS:
            from mlflow.exceptions import INVALID_PARAMETER_VALUE, MlflowException

            raise MlflowException(f"params.output {output!r}: expected one of "
                                  f"{', '.join(OUTPUTS)}", INVALID_PARAMETER_VALUE)
        if len(model_input) == 0:  # nothing to predict: an empty answer, not a stack trace
            labels = np.asarray([], dtype=object)
            if output == "label" or self.classes is None:
                return labels
            return pd.DataFrame({"label": labels, **{f"probability_{c}": np.asarray([], float)
                                                     for c in self.classes}})
        labels = self.model.predict(model_input)
        if output == "label":
            return labels
        if self.classes is None:
            from mlflow.exceptions import INVALID_PARAMETER_VALUE, MlflowException

            raise MlflowException("params.output 'probabilities': this model is a regressor; "
                                  "use 'label'", INVALID_PARAMETER_VALUE)
        proba = np.asarray(self.model.predict_proba(model_input))
        frame = pd.DataFrame({"label": np.asarray(labels)})
        for k, cls in enumerate(self.classes):
            frame[f"probability_{cls}"] = proba[:, k]
        return frame

    # What evaluators read from a raw model (``get_raw_model()`` returns this object).
    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        return self.model.predict_proba(X)

    @property
    def classes_(self) -> np.ndarray | None:
        return self.model.classes_


class GeneratedCodeModel(ServedModel):
    """A code-mode model: LLM-written ``candidate.py`` and its fitted pipeline, logged as
    artifacts (bytes the search never loaded on its host). **Loading it runs the LLM-written
    code** in the loading process: serve it inside a container (docs/guides/code-mode.md says
    how), and promote it only with ``--accept-generated-code``."""

    def __init__(self, classes: list | None = None) -> None:
        super().__init__(None, classes)

    def load_context(self, context: Any) -> None:
        import importlib.util
        import os
        import pickle
        import sys

        if os.environ.get(ACCEPT_ENV, "").lower() not in ("1", "true", "yes"):
            from mlflow.exceptions import MlflowException

            raise MlflowException(
                "this is a code-mode model: loading it runs LLM-written code (candidate.py) and "
                "unpickles its pipeline in this process. Load it only inside a container, locked "
                f"down as the sandbox is, and accept that by setting {ACCEPT_ENV}=1 there "
                "(docs/guides/code-mode.md: serving a code-mode model)")

        import cloudpickle
        from sklearn.pipeline import Pipeline

        spec = importlib.util.spec_from_file_location("candidate",
                                                      context.artifacts["candidate"])
        if spec is None or spec.loader is None:
            raise RuntimeError(f"cannot load {context.artifacts['candidate']} as a module")
        module = importlib.util.module_from_spec(spec)
        sys.modules["candidate"] = module  # the pipeline's pickle refers to this name
        spec.loader.exec_module(module)
        with open(context.artifacts["inputs"], "rb") as handle:
            inputs = cloudpickle.load(handle)
        with open(context.artifacts["model"], "rb") as handle:
            fitted = pickle.load(handle)
        self.model = Pipeline([*inputs.steps, ("candidate", fitted)])
