"""A registered version's predictions on given rows, for the two places that compare versions:
registration (is the new model better than ``@challenger``?) and the promotion gate (is the
challenger better than ``@champion``?). A code-mode version predicts in a fresh sandbox
container: its code never runs here."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import mlflow
import numpy as np
import pandas as pd

from mlflow_agentic.core import evidence as ev
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.types import is_regression
from mlflow_agentic.scoring.paired import Outputs
from mlflow_agentic.tracking.registry.outputs import model_outputs
from mlflow_agentic.tracking.store import downloaded

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

    from mlflow_agentic.data import Dataset
    from mlflow_agentic.scoring.paired import PairedComparison


def version_outputs(model: str, mv: ModelVersion, X: pd.DataFrame, model_type: str,
                    own_holdout: bool = False) -> Outputs:
    """Version ``mv`` of ``model`` predicting ``X`` (it gets the columns its signature
    names). ``own_holdout``: ``X`` is its search's holdout, so a version refit on all rows is
    judged by the model that holdout scored (``scored_uri``)."""
    try:
        if mv.tags.get(ev.GENERATED_CODE) == "true":
            return _generated_outputs(model, mv.version, X, model_type)
        loaded = mlflow.pyfunc.load_model(scored_uri(model, mv, own_holdout))
        schema = loaded.metadata.get_input_schema()
        if schema is not None and schema.has_input_names():
            X = X[[c for c in schema.input_names() if c in X.columns]]
        return Outputs(*model_outputs(loaded, X, model_type))
    except UserInputError:
        raise
    except Exception as exc:
        raise UserInputError(f"version {mv.version} of {model!r} cannot score the evaluation "
                             f"data: {type(exc).__name__}: {exc}") from exc


def scored_uri(model: str, mv: ModelVersion, own_holdout: bool) -> str:
    """What judges version ``mv``: the version itself; or, on its search's own holdout, for a
    version refit on training + holdout rows, the model that holdout scored (logged beside it,
    its digest a param of the same run, checked here)."""
    from mlflow_agentic.tracking.store import model_sha256

    if own_holdout and mv.run_id:
        params = mlflow.MlflowClient().get_run(mv.run_id).data.params
        uri = params.get(ev.EVIDENCE_MODEL_URI)
        if uri:
            if model_sha256(uri) != params.get(ev.EVIDENCE_MODEL_SHA256):
                raise UserInputError(f"version {mv.version} of {model!r}: the model its holdout "
                                     f"scored ({uri}) is not the one its search logged")
            return uri
    return f"models:/{model}/{mv.version}"


def fitted_outputs(fitted: Any, X: pd.DataFrame, model_type: str) -> Outputs:
    """A model fitted in this process (or a ``SandboxedModel``) predicting ``X``."""
    if model_type == "classifier" and hasattr(fitted, "predict_proba"):
        return Outputs(None, np.asarray(fitted.predict_proba(X)), tuple(fitted.classes_))
    return Outputs(np.asarray(fitted.predict(X)).ravel(), None, ())


def _generated_outputs(model: str, version: str, X: pd.DataFrame,
                       model_type: str) -> Outputs:
    """A code-mode version's artifacts (code, the pipeline's pickle as bytes, the engine's
    input step), predicting in a fresh sandbox container."""
    import cloudpickle

    from mlflow_agentic.sandbox import make_sandbox
    from mlflow_agentic.sandbox.model import SandboxedModel

    with downloaded(f"models:/{model}/{version}", purpose="version") as model_folder:
        folder = model_folder / "artifacts"
        meta = json.loads((folder / "meta.json").read_text())
        inputs = cloudpickle.loads((folder / "inputs.pkl").read_bytes())  # the engine's step
        code, pickled = (folder / "candidate.py").read_text(), (folder / "model.pkl").read_bytes()
    sandboxed = SandboxedModel(make_sandbox(), code, pickled, inputs, meta["task"],
                               tuple(meta["classes"]))
    return fitted_outputs(sandboxed, X, model_type)


def against_alias(name: str, alias: str, fitted: Any, holdout: Dataset, metric: str,
                  digest: str) -> tuple[ModelVersion, PairedComparison] | None:
    """``(version, comparison)``: the model ``fitted`` against the version ``alias`` points at,
    paired on the sealed ``holdout`` rows (a ``Dataset``). None when there is nothing like for
    like to compare with: no such version, or one judged on other rows or by another metric."""
    from mlflow.exceptions import MlflowException

    from mlflow_agentic.scoring.paired import paired_bootstrap

    try:
        standing = mlflow.MlflowClient().get_model_version_by_alias(name, alias)
    except MlflowException:
        return None
    if (standing.tags.get(ev.HOLDOUT_DIGEST) != digest
            or standing.tags.get(ev.METRIC) != metric):
        return None
    model_type = "regressor" if is_regression(holdout.task) else "classifier"
    ours = fitted_outputs(fitted, holdout.X, model_type)
    theirs = version_outputs(name, standing, holdout.X, model_type, own_holdout=True)
    return standing, paired_bootstrap(metric, holdout.y, ours, theirs)
