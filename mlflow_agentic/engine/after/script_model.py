"""One attempt's model as plain code for ``attempt.py``: its estimator written as a constructor
call with the attempt's hyperparameters, and a ``fit`` function that builds and fits the same
pipeline the search cross-validated (early stopping on a tenth of the rows, as the engine's
boosters do), with nothing of mlflow-agentic in it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.types import is_classification
from mlflow_agentic.trainers import get_trainer
from mlflow_agentic.trainers.transforms import (
    EncodedLabelClassifier,
    InnerValidationEarlyStopping,
)

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset


class NotPlain(ValueError):
    """The attempt's model cannot be written as plain code (a third-party object)."""


@dataclass(frozen=True)
class ModelCode:
    """``fit_<name>(X, y)`` as code, the imports it needs and the preprocessing style it uses."""

    code: str
    imports: frozenset[str]
    style: str


def model_code(trainer_name: str, params: dict, train: Dataset, seed: int,
               name: str) -> ModelCode:
    """``def fit_<name>(X, y)`` for ``trainer_name`` with ``params`` on ``train``'s columns."""
    trainer = get_trainer(trainer_name)
    built = trainer.model(train, trainer.resolve_params(train, params), seed)
    coded = isinstance(built, EncodedLabelClassifier)
    if coded:
        built = built.estimator
    stop = built if isinstance(built, InnerValidationEarlyStopping) else None
    estimator = stop.estimator if stop is not None else built
    library = type(estimator).__module__.split(".")[0]
    extra: dict[str, Any] = {}
    if stop is not None and library == "lightgbm":
        extra["early_stopping_round"] = stop.rounds
    elif stop is not None and library == "xgboost":
        extra["early_stopping_rounds"] = stop.rounds
    made, imports = constructor(estimator, extra)
    style = trainer.preprocessing
    whole_codes = stop is not None and library == "catboost" and bool(stop.categorical)
    pre = f'preprocessing("{style}"{", whole_codes=True" if whole_codes else ""})'
    if stop is None:
        code = (f'def {name}(X, y):\n'
                f'    """{trainer_name}: {trainer.description or trainer_name}."""\n'
                f'    model = {made}\n'
                f'    return Pipeline([("preprocess", {pre}), ("model", model)]).fit(X, y)\n')
        return ModelCode(code, frozenset(imports), style)
    fit_args = ["eval_set=[(Z_val, y_val)]"]
    if library == "catboost":
        fit_args.append(f"early_stopping_rounds={stop.rounds}")
        if stop.categorical:
            fit_args.append(f"cat_features={list(stop.categorical)!r}")
    elif library == "xgboost":
        fit_args.append("verbose=False")
    elif stop.categorical:
        fit_args.append(f"categorical_feature={list(stop.categorical)!r}")
    codes = ("    y = pd.Categorical(y, categories=CLASSES).codes  # XGBoost takes 0..k-1\n"
             if coded else "")
    stratify = "y" if is_classification(train.task) else "None"
    code = (
        f'def {name}(X, y):\n'
        f'    """{trainer_name}: the preprocessing fitted on every row of X; the booster on '
        f'{1 - stop.validation_fraction:.0%}\n'
        f'    of them, stopped when {stop.rounds} rounds bring no gain on the other '
        f'{stop.validation_fraction:.0%}."""\n'
        f'    y = np.asarray(y)\n'
        f'    preprocess = {pre}\n'
        f'    Z = preprocess.fit_transform(X, y)\n'
        f'{codes}'
        f'    Z_fit, Z_val, y_fit, y_val = train_test_split(\n'
        f'        Z, y, test_size={stop.validation_fraction!r}, '
        f'random_state={stop.random_state!r}, stratify={stratify})\n'
        f'    model = {made}\n'
        f'    {call("model.fit", ["Z_fit", "y_fit", *fit_args])}\n'
        f'    return Pipeline([("preprocess", preprocess), ("model", model)])\n')
    return ModelCode(code, frozenset(imports | {"from sklearn.model_selection import "
                                                 "train_test_split"}), style)


def constructor(estimator: Any, extra: dict[str, Any] | None = None) -> tuple[str, set[str]]:
    """``Name(param=value, ...)`` with the parameters that differ from the class's defaults,
    and the import line of the class. Raises ``NotPlain`` for a value that is no literal."""
    cls = type(estimator)
    module = cls.__module__
    if module.startswith("sklearn."):
        module = ".".join(module.split(".")[:2])  # sklearn.linear_model, not its private file
    elif module.split(".")[0] in ("lightgbm", "xgboost", "catboost"):
        module = module.split(".")[0]
    params = estimator.get_params(deep=False)
    try:
        defaults = cls().get_params(deep=False)
    except Exception:  # noqa: BLE001 - a class without defaults: every parameter is written
        defaults = {}
    args = []
    for key, value in {**params, **(extra or {})}.items():
        if key in defaults and _same(value, defaults[key]):
            continue
        args.append(f"{key}={_literal(value)}")
    return call(cls.__name__, args), {f"from {module} import {cls.__name__}"}


def call(name: str, args: list[str], indent: int = 4, width: int = 96) -> str:
    """``name(arg, ...)`` on one line, or wrapped under it when longer than ``width``."""
    line = f"{name}({', '.join(args)})"
    if indent + len(line) + 8 <= width:
        return line
    rows, row = [], ""
    for arg in args:
        if row and indent + 4 + len(row) + len(arg) + 2 > width:
            rows.append(row.rstrip())
            row = ""
        row += arg + ", "
    rows.append(row.rstrip(", "))
    pad = "\n" + " " * (indent + 4)
    return f"{name}({pad}{pad.join(rows)})"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - arrays and other values without a truth value
        return False


def _literal(value: Any) -> str:
    """``value`` as Python source; NumPy scalars as numbers. Raises ``NotPlain`` otherwise."""
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f'float("{value}")'
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_literal(v) for v in value)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    raise NotPlain(f"a parameter value of type {type(value).__name__} is not a literal")
