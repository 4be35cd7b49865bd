"""Log the refit best model (signature, input example, pinned requirements) and register it."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import types
import warnings
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import cloudpickle
import mlflow
import pandas as pd
from mlflow.models import infer_signature

from mlflow_agentic.core import evidence as ev
from mlflow_agentic.core import labels
from mlflow_agentic.core.types import is_classification
from mlflow_agentic.tracking.registry import serving
from mlflow_agentic.trainers import stacked, transforms

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion
    from mlflow.models import ModelSignature
    from mlflow.models.model import ModelInfo

    from mlflow_agentic.core.dataset_like import DatasetLike

BASE_REQUIREMENTS = ("mlflow", "scikit-learn", "cloudpickle", "pandas", "numpy", "scipy")
DEFAULT_ALIAS = "challenger"


def pinned_requirements(extra: tuple[str, ...] = ()) -> list[str]:
    """``name==installed_version`` for what a served model imports (no slow inference)."""
    pins = []
    for dist in (*BASE_REQUIREMENTS, *extra):
        try:
            pins.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            pins.append(dist)
    return pins


BY_VALUE = (labels, transforms, stacked, serving)
"""The modules a logged model's pickle carries with it (numpy, pandas, scikit-learn only)."""


@contextlib.contextmanager
def _pickle_by_value() -> Iterator[None]:
    """Embed our small modules (transformers, the stacked ensemble, the served wrapper, the
    label rule) in the pickle: the model loads and serves without our package."""
    for module in BY_VALUE:
        cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        for module in BY_VALUE:
            cloudpickle.unregister_pickle_by_value(module)


@contextlib.contextmanager
def quiet_loggers(*names: str, level: int = logging.ERROR) -> Iterator[None]:
    """MLflow's loggers ``names`` at ``level`` for the block: notes meant for MLflow's own
    users (cloudpickle chosen on purpose, an input-example check, the evaluator's INFO)."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, previous in zip(loggers, levels, strict=True):
            logger.setLevel(previous)


SCHEMA_SAMPLE_ROWS = 200


def schema_sample(frame: pd.DataFrame, rows: int = SCHEMA_SAMPLE_ROWS) -> pd.DataFrame:
    """Rows enough to infer a schema: the first ``rows`` plus some with missing values.

    MLflow's schema inference walks every value (seconds on a few thousand text rows); types
    are settled by a sample that includes the missing-value cases.
    """
    if len(frame) <= rows:
        return frame
    with_missing = frame[frame.isna().any(axis=1)].head(rows // 10)
    return pd.concat([frame.head(rows), with_missing[~with_missing.index.isin(range(rows))]])


def warm_up() -> threading.Thread:
    """Do, in a background thread while the search's workers fit, the one-time work of a
    process's first model logging: MLflow maps every installed package to its modules for its
    requirements check (1.4 s on an idle core here, 2.5 s with the other core busy), and the
    holdout plot imports matplotlib. The recording after the search keeps back 1 s + 3% of the
    budget, so at 20 s these paid there ran the command past its budget (by up to 3 s with a
    core busy). Nothing here is required: a failure only leaves the work to the logging."""
    def work() -> None:
        with contextlib.suppress(Exception):
            from mlflow.utils.requirements_utils import warn_dependency_requirement_mismatches

            warn_dependency_requirement_mismatches(pinned_requirements())  # all installed
        with contextlib.suppress(Exception):
            import matplotlib.figure  # noqa: F401 - the holdout plot's import, done here

    thread = threading.Thread(target=work, name="mlflow-agentic-warm-up", daemon=True)
    thread.start()
    return thread


def log_model(model: Any, dataset: DatasetLike, requirements: tuple[str, ...] = (),
              name: str = "model") -> ModelInfo:
    """Log ``model`` to the active run as a ``ServedModel`` pyfunc (labels, or with
    ``params={"output": "probabilities"}`` the class probabilities too); returns MLflow's
    ``ModelInfo``. A code-mode model (``runs_generated_code``) is logged from its bytes."""
    if getattr(model, "runs_generated_code", False):
        return log_generated_model(model, dataset, requirements, name)
    X = schema_sample(dataset.X)  # raw columns as in the file: the pipeline does the rest
    classes = list(dataset.classes) if is_classification(dataset.task) else None
    with _logging_a_model():
        signature = _signature(X, model.predict(X), model, dataset)
        return mlflow.pyfunc.log_model(
            name=name, python_model=serving.ServedModel(model, classes), signature=signature,
            input_example=X.head(5), pip_requirements=pinned_requirements(requirements),
        )


@contextlib.contextmanager
def _logging_a_model() -> Iterator[None]:
    """cloudpickle is chosen on purpose (the pickle embeds our two small modules, so serving
    needs no package of ours): no warning about it, nor a log line for the example check,
    nor MLflow's schema hints meant for hand-written models."""
    with _pickle_by_value(), quiet_loggers("mlflow.pyfunc", "mlflow.models.model"), \
            warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer")
        warnings.filterwarnings("ignore", message=".*type hint.*")
        yield


def _signature(X: pd.DataFrame, predicted: Any, model: Any,
               dataset: DatasetLike) -> ModelSignature:
    """The serving signature from the raw columns ``X`` and labels ``predicted``."""
    return serving_signature(infer_signature(X, predicted, params={"output": "label"}), model,
                             dataset)


def log_generated_model(model: Any, dataset: DatasetLike, requirements: tuple[str, ...] = (),
                        name: str = "model") -> ModelInfo:
    """A code-mode model (``sandbox.SandboxedModel``), logged without loading it here: the
    candidate's code, its pipeline's pickle as the sandbox made it, and the engine's input step
    are artifacts of a ``GeneratedCodeModel`` pyfunc. The signature's outputs and the input
    example's predictions come from the sandbox; MLflow's serving-input check (which would load
    the model, running the LLM-written code here) is off."""
    import os
    import tempfile
    from pathlib import Path

    from mlflow.models import Model

    X = schema_sample(dataset.X)
    classes = list(dataset.classes) if is_classification(dataset.task) else None
    example = X.head(5)
    # MLflow copies each artifact with a download progress bar: not for our users
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    with tempfile.TemporaryDirectory() as tmp, _logging_a_model():
        folder = Path(tmp)
        (folder / "candidate.py").write_text(model.code)
        (folder / "model.pkl").write_bytes(model.model_bytes)
        (folder / "inputs.pkl").write_bytes(cloudpickle.dumps(model.inputs))
        (folder / "meta.json").write_text(json.dumps({"task": dataset.task, "classes": [
            c.item() if hasattr(c, "item") else c for c in classes or []]}))
        signature = _signature(X, model.predict(example), model, dataset)
        return Model.log(
            artifact_path=None, name=name, flavor=_PYFUNC_UNCHECKED,
            python_model=serving.GeneratedCodeModel(classes),
            artifacts={part: str(folder / file) for part, file in (
                ("candidate", "candidate.py"), ("model", "model.pkl"),
                ("inputs", "inputs.pkl"), ("meta", "meta.json"))},
            signature=signature, input_example=example,
            pip_requirements=pinned_requirements(requirements), validate_serving_input=False,
            tags={ev.GENERATED_CODE: "true"})


def _save_pyfunc(path: str, mlflow_model: Any, validate_serving_input: bool = True,
                 **kwargs: Any) -> None:
    return mlflow.pyfunc.save_model(path=path, mlflow_model=mlflow_model, **kwargs)


_PYFUNC_UNCHECKED = types.SimpleNamespace(__name__="mlflow.pyfunc", save_model=_save_pyfunc)
"""``mlflow.pyfunc`` as ``Model.log``'s flavor, taking ``validate_serving_input=False``: the
check loads the model in this process, and pyfunc's ``save_model`` refuses the keyword."""


def serving_signature(signature: ModelSignature, model: Any,
                      dataset: DatasetLike | None = None) -> ModelSignature:
    """What the served model accepts: the raw file columns; numeric columns (and any column not
    plain text) typed ``Any``, because the pipeline coerces them itself: int64, floats with
    missing values and numbers stored as text all pass, whether the caller is a REST request or
    ``pyfunc.predict(pd.read_csv(...))``. Excluded columns (IDs, flagged: never read) and
    columns the model saw missing in training (for an ensemble: missing for every member) are
    optional (each pipeline's ``inputs`` step adds them back as missing); the others are
    required."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, DataType, Schema
    from mlflow.types.schema import AnyType

    optional = transforms.optional_inputs(model)
    optional |= set(getattr(dataset, "excluded_columns", {}) or {})  # never read by the model
    columns = getattr(dataset, "columns", {}) or {}

    def loose(spec: Any) -> bool:
        kind = getattr(columns.get(spec.name), "kind", None)
        return kind == "numeric" or spec.type != DataType.string

    specs: list[Any] = [ColSpec(AnyType() if loose(c) else c.type, c.name,
                                required=c.name not in optional)
                        for c in signature.inputs.inputs]
    return ModelSignature(inputs=Schema(specs), outputs=signature.outputs,
                          params=signature.params)


def version_of_search(name: str, search_run_id: str,
                      attempt_run_id: str) -> ModelVersion | None:
    """The version of ``name`` an earlier, interrupted pass of this search registered from
    this attempt's run (a resume must not register the same result twice), or None."""
    from mlflow.exceptions import MlflowException

    if not attempt_run_id:
        return None
    try:
        found = mlflow.MlflowClient().search_model_versions(
            f"name = '{name}' and run_id = '{attempt_run_id}'")
    except MlflowException:
        return None
    ours = [v for v in found if v.tags.get(ev.SEARCH_RUN_ID) == search_run_id]
    return min(ours, key=lambda v: int(v.version)) if ours else None


def register(model_uri: str, name: str, tags: dict[str, Any], alias: str = DEFAULT_ALIAS,
             description: str = "", model_description: str = "",
             existing: ModelVersion | None = None) -> tuple[ModelVersion, str]:
    """Register ``model_uri`` under ``name`` with evidence tags, and point ``alias`` at it
    unless the version it points at now scores better on the same holdout (same digest and
    metric): two searches finishing in any order leave the alias on the better one. Returns
    the new version and a sentence on what became of the alias. ``existing``: the version an
    interrupted pass of the same search registered: completed, not registered again."""
    client = mlflow.MlflowClient()
    if existing is not None:
        for key, value in tags.items():
            client.set_model_version_tag(name, existing.version, key, str(value))
        mv = client.get_model_version(name, existing.version)
    else:
        mv = mlflow.register_model(model_uri, name, tags={k: str(v) for k, v in tags.items()})
    if description:
        client.update_model_version(name, mv.version, description=description)
    if model_description:
        client.update_registered_model(name, description=model_description)
    below = _not_above_baseline(tags) or _self_deceived(tags)
    if below:
        note = f"@{alias} not moved to version {mv.version}: {below}"
        client.set_model_version_tag(name, mv.version, ev.ALIAS_DECISION, note)
        return mv, note
    for attempt in range(3):  # another search may set the alias at the same moment
        kept = _better_holder(client, name, alias, tags)
        if kept is not None:
            version, theirs, ours = kept
            metric = tags[ev.METRIC]
            note = (f"@{alias} stays on version {version}: it scores better on the same "
                    f"holdout ({metric} {theirs:.4f} vs {ours:.4f} for version {mv.version})")
            client.set_model_version_tag(name, mv.version, ev.ALIAS_DECISION, note)
            return mv, note
        try:
            client.set_registered_model_alias(name, alias, mv.version)
            break
        except Exception:  # sqlite: UNIQUE constraint when both inserted the alias row
            if attempt == 2:
                raise
            time.sleep(0.2 * (attempt + 1))
    return mv, f"@{alias} -> version {mv.version}"


def _not_above_baseline(tags: dict[str, Any]) -> str:
    """Why a version's holdout score does not earn an alias: not above the trivial baseline
    ('' when it is, or when there is no holdout score to judge)."""
    from mlflow_agentic.core.metrics import METRICS

    metric = str(tags.get(ev.METRIC, ""))
    try:
        holdout, base = float(tags[ev.holdout(metric)]), float(tags[ev.baseline(metric)])
    except (KeyError, TypeError, ValueError):
        return ""
    if metric not in METRICS or METRICS[metric].better(holdout, base):
        return ""
    return (f"its sealed-holdout {metric} {holdout:.4f} is not above the trivial baseline "
            f"{base:.4f} (a model no better than a constant is not a challenger)")


def _self_deceived(tags: dict[str, Any]) -> str:
    """Why an LLM submitter's choice whose CV the sealed holdout contradicts earns no alias
    ('' when the gap is within its limit, unknown, or the engine chose): an LLM never gets the
    last word, and a candidate may have steered that choice (the engine's own choices go to
    the promotion gate, which refuses a self-deceived version)."""
    if str(tags.get(ev.SELF_DECEIVED, "")).lower() != "true" or \
            tags.get("selection") != "submitter":
        return ""
    return (f"its holdout gap {tags.get(ev.GAP, '?')} is above the limit: CV flattered the "
            "submitter's choice (self-deceived), so it does not challenge; the version keeps "
            "its evidence")


def _better_holder(client: mlflow.MlflowClient, name: str, alias: str,
                   tags: dict[str, Any]) -> tuple[str, float, float] | None:
    """(version, its score, ours) when the alias's current version beats ``tags`` on the same
    evidence; else None (no holder, other evidence, or ours is at least as good)."""
    from mlflow.exceptions import MlflowException

    from mlflow_agentic.core.metrics import METRICS

    metric = str(tags.get(ev.METRIC, ""))
    try:
        current = client.get_model_version_by_alias(name, alias)
    except MlflowException:
        return None
    key = ev.holdout(metric)
    digest = tags.get(ev.HOLDOUT_DIGEST)
    same = (current.tags.get(ev.METRIC) == metric and metric in METRICS and digest is not None
            and current.tags.get(ev.HOLDOUT_DIGEST) == digest)
    try:
        theirs, ours = float(current.tags[key]), float(tags[key])
    except (KeyError, TypeError, ValueError):
        return None
    if same and METRICS[metric].better(theirs, ours):
        return current.version, theirs, ours
    return None


def load_llm_recording(source: str) -> list[dict]:
    """Recorded LLM exchanges from a JSONL path, or from an MLflow run's artifact."""
    from pathlib import Path

    from mlflow.exceptions import MlflowException

    from mlflow_agentic.core.errors import UserInputError
    from mlflow_agentic.llm.replay import EXCHANGES_ARTIFACT, read_exchanges
    from mlflow_agentic.tracking.store import downloaded

    if Path(source).exists():
        return read_exchanges(source)
    try:
        with downloaded(run_id=source, artifact_path=EXCHANGES_ARTIFACT, purpose="replay") as path:
            return read_exchanges(path)
    except (MlflowException, OSError) as exc:
        raise UserInputError(f"--replay {source!r} is neither a file nor a run with an "
                             f"{EXCHANGES_ARTIFACT} artifact: {exc}") from exc
