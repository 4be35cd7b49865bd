"""A registered (or logged) model predicting a file's rows, for ``mlflow-agentic predict``:
the model named as a user names it, loaded as ``mlflow models serve`` loads it, so it refuses
exactly what serving refuses, with the same messages."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from mlflow_agentic.core.errors import UserInputError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mlflow import MlflowClient
    from mlflow.entities import Run
    from mlflow.types import Schema


def model_uri(spec: str) -> tuple[str, str]:
    """``(uri, note)`` for ``spec``: a ``models:/`` or ``runs:/`` URI, ``NAME@ALIAS``,
    ``NAME/VERSION``, ``NAME`` (its @champion, else its @challenger), or a run id (a search
    run or an attempt run: the model logged on the selected attempt)."""
    import mlflow
    from mlflow.exceptions import MlflowException

    client = mlflow.MlflowClient()
    if spec.startswith(("models:/", "runs:/")):
        return spec, ""
    if "@" in spec:
        return f"models:/{spec}", ""
    if re.fullmatch(r"[^/]+/\d+", spec):
        return f"models:/{spec}", ""
    if re.fullmatch(r"[0-9a-f]{32}", spec):
        try:
            run = client.get_run(spec)
        except MlflowException as exc:
            raise UserInputError(f"no run {spec!r} in the tracking store "
                                 f"{mlflow.get_tracking_uri()}") from exc
        logged = run.data.tags.get("model_uri") or _selected_model(client, run)
        if not logged:
            raise UserInputError(f"run {spec} logged no model (a search that verified "
                                 "nothing, or an attempt that was not selected)")
        return logged, f"the model logged on run {spec}'s selected attempt"
    for alias in ("champion", "challenger"):
        try:
            version = client.get_model_version_by_alias(spec, alias)
        except MlflowException:
            continue
        return f"models:/{spec}@{alias}", f"{spec}@{alias} (version {version.version})"
    names = [m.name for m in client.search_registered_models(max_results=50)]
    raise UserInputError(f"no registered model {spec!r} with @champion or @challenger "
                         f"(registered: {', '.join(names) or 'none'}); name one as NAME@ALIAS, "
                         "NAME/VERSION, a models:/ or runs:/ URI, or a run id")


def _selected_model(client: MlflowClient, run: Run) -> str | None:
    """A search run's selected attempt's logged model (``model_uri`` on that child run)."""
    if run.data.tags.get("agentic.role") != "search":
        return None
    children = client.search_runs(
        [run.info.experiment_id], f"tags.`mlflow.parentRunId` = '{run.info.run_id}'")
    logged = [c.data.tags["model_uri"] for c in children if "model_uri" in c.data.tags]
    return logged[0] if logged else None


def predict_rows(uri: str, rows: pd.DataFrame, keep: str | None = None, *,
                 source: str = "the rows", warn: Callable[[str], None] | None = None
                 ) -> pd.DataFrame:
    """``rows`` predicted by the model at ``uri``: ``label`` and, for a classifier, one
    ``probability_<class>`` column per class; ``keep``: an input column carried first (an
    ID). A column the model needs and ``rows`` lack is refused in two lines (which, and what
    was given); columns it does not take are dropped, and ``warn`` is told which. Any other
    refusal (text where a number belongs) is the model's own message, as serving gives it."""
    import mlflow
    from mlflow.exceptions import MlflowException

    if keep is not None and keep not in rows.columns:
        raise UserInputError(f"--keep {keep!r}: no such column in the rows (columns: "
                             f"{', '.join(map(str, rows.columns[:12]))}...)")
    kept = None if keep is None else rows[keep]
    try:
        model = mlflow.pyfunc.load_model(uri)
    except MlflowException as exc:
        raise UserInputError(f"cannot load {uri}: {exc.message}") from exc
    schema = model.metadata.get_input_schema()
    if schema is not None and schema.has_input_names():
        rows = _model_columns(rows, schema, keep, source, warn)
    try:  # a classifier answers with probabilities; a regressor says it is one
        try:
            out = model.predict(rows, params={"output": "probabilities"})
        except MlflowException as exc:
            if "regressor" not in exc.message:
                raise
            out = model.predict(rows)
    except MlflowException as exc:
        raise UserInputError(exc.message) from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise UserInputError(f"the model refused the rows: {exc}") from exc
    frame = out if isinstance(out, pd.DataFrame) else pd.DataFrame({"label": list(out)})
    if keep is not None and kept is not None:
        frame.insert(0, keep, kept.to_numpy())
    return frame


def _names(columns: Sequence[Any], limit: int = 12) -> str:
    names = [str(c) for c in columns]
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit
                                       else "")


def _model_columns(rows: pd.DataFrame, schema: Schema, keep: str | None, source: str,
                   warn: Callable[[str], None] | None) -> pd.DataFrame:
    """``rows`` cut to the schema's columns; a required one missing is the user's error."""
    takes = list(schema.input_names())
    required = [spec.name for spec in schema.inputs if getattr(spec, "required", True)]
    missing = [c for c in required if c not in rows.columns]
    if missing:
        raise UserInputError(
            f"{source} lack {len(missing)} column(s) the model needs: {_names(missing)}\n"
            f"the model takes {_names(takes)}; {source} have {_names(rows.columns)}")
    extra = [c for c in rows.columns if c not in set(takes) and c != keep]
    if extra and warn is not None:
        warn(f"{source}: ignored {len(extra)} column(s) the model does not take: "
             f"{_names(extra)}")
    return rows[[c for c in rows.columns if c in set(takes)]]
