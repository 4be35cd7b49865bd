"""Experiment and registered-model names checked against MLflow's rules before a search, so
nothing is computed for a name it would refuse."""

from __future__ import annotations

from mlflow_agentic.core.errors import UserInputError

MAX_EXPERIMENT_NAME = 500
"""MLflow's limits, checked before the search so nothing is computed for a name it refuses."""


def check_names(*, register_name: str | None, experiment: str | None, dataset_name: str,
                register: bool = True) -> None:
    """Refuse a registered-model or experiment name MLflow would refuse at the end of the
    search (``a/b`` searched 9 attempts, then failed at registration): before any fit."""
    model = register_name or f"{dataset_name}-agentic"
    given = "--register-name" if register_name else "the registered-model name (from the file)"
    if register:
        if not model.strip():
            raise UserInputError(f"{given} is blank: give a name, e.g. churn-agentic")
        bad = [c for c in ("/", ":") if c in model]
        if bad or model.strip() in (".", ".."):
            fixed = model.replace("/", "-").replace(":", "-").strip(".") or "my-model"
            raise UserInputError(f"{given} {model!r}: a registered model's name cannot contain "
                                 f"'/' or ':' or be '.' or '..' (MLflow's rule); e.g. "
                                 f"--register-name {fixed}")
    name = experiment or f"{dataset_name}-agentic"
    if not name.strip():
        raise UserInputError("--experiment is blank: give a name, or leave it out for "
                             f"{dataset_name}-agentic")
    if len(name) > MAX_EXPERIMENT_NAME:
        raise UserInputError(f"--experiment is {len(name)} characters; MLflow allows at most "
                             f"{MAX_EXPERIMENT_NAME}")


def check_experiment_live(uri: str, name: str) -> None:
    """Refuse an experiment name that belongs to a deleted experiment (MLflow would refuse to
    make it active, after the search), saying how to restore it or which name to use."""
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        found = mlflow.MlflowClient(uri).get_experiment_by_name(name)
    except MlflowException:
        return  # the store answers for itself when the search starts
    if found is not None and found.lifecycle_stage == "deleted":
        raise UserInputError(
            f"experiment {name!r} (id {found.experiment_id}) is deleted in {uri}: restore it first "
            f"(mlflow experiments restore --experiment-id {found.experiment_id}, with "
            f"MLFLOW_TRACKING_URI={uri}) or give another --experiment")
