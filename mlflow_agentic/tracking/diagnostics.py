"""Diagnostics of the selected model on the sealed holdout, logged on its own (child) run.

MLflow's default evaluator draws what it knows (ROC, precision-recall, calibration, lift,
confusion matrix; residuals for regression) and logs its metrics with a ``holdout_`` prefix;
permutation importance explains which input columns the score depends on; the holdout
predictions are a table. A diagnostic that fails is recorded as a tag, never fatal.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import warnings
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
from mlflow.models import Model
from mlflow.pyfunc import PyFuncModel

from mlflow_agentic.engine.folds import model_output, score_output
from mlflow_agentic.metrics import METRICS

IMPORTANCE_REPEATS = 5
IMPORTANCE_SHOWN = 15
DECIMALS = 4


class _SklearnView:
    """The fitted pipeline seen as an sklearn-flavoured pyfunc, so the default evaluator finds
    ``predict_proba`` (the registered pyfunc wraps the same object)."""

    def __init__(self, model) -> None:
        self.model = model

    def predict(self, data, params=None):
        return self.model.predict(data)

    def get_raw_model(self):
        return self.model


def log_diagnostics(rec, model, train, holdout, metric: str, model_id: str | None = None,
                    seed: int = 0) -> dict[str, str]:
    """Evaluate ``model`` (refit on ``train``) on the ``holdout`` rows, on the active run.
    Returns tags: what was logged, or why a diagnostic could not be."""
    tags: dict[str, str] = {}
    hd = holdout.dataset
    for name, step in (("evaluate", lambda: _evaluate(model, hd, train, model_id)),
                       ("predictions", lambda: _log_predictions(model, hd, train)),
                       ("importance", lambda: _log_importance(model, hd, train, metric, seed))):
        try:
            rec.call(f"logging holdout diagnostics ({name})", step)
            tags[f"diagnostics.{name}"] = "logged"
        except Exception as exc:  # recorded, never fatal
            tags[f"diagnostics.{name}"] = f"failed: {type(exc).__name__}: {exc}"[:500]
    return tags


def _evaluate(model, hd, train, model_id: str | None) -> None:
    classifier = train.task != "regression"
    config = {"log_model_explainability": False, "metric_prefix": "holdout_"}
    if train.task == "binary":
        config["pos_label"] = train.positive_class
    data = mlflow.data.from_pandas(hd.frame, targets=hd.target, name="holdout")
    view = PyFuncModel(Model(flavors={"python_function": {"loader_module": "mlflow.sklearn"}}),
                       _SklearnView(model))
    with warnings.catch_warnings(), _quiet("mlflow"):
        warnings.simplefilter("ignore")
        mlflow.models.evaluate(view, data, model_type="classifier" if classifier else "regressor",
                               evaluators=["default"], evaluator_config={"default": config},
                               model_id=model_id)


@contextlib.contextmanager
def _quiet(name: str):
    """The evaluator's INFO lines (active model set, label inference) are not for users."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _log_predictions(model, hd, train) -> None:
    """Every holdout row: its ID columns, the truth, the prediction (and probabilities)."""
    X = hd.X
    ids = [c for c, info in train.columns.items() if info.kind == "id" and c in X.columns]
    table = X[ids].copy() if ids else pd.DataFrame(index=X.index)
    table.insert(0, "row", np.arange(len(X)))
    table[f"actual_{hd.target}"] = hd.y.to_numpy()
    predicted = model.predict(X)
    table[f"predicted_{hd.target}"] = predicted
    if train.task != "regression":
        proba = np.asarray(model.predict_proba(X))
        for k, cls in enumerate(train.classes):
            table[f"probability_{cls}"] = np.round(proba[:, k], DECIMALS)
        table["correct"] = table[f"actual_{hd.target}"].astype(str) == pd.Series(
            predicted, index=table.index).astype(str)
    else:
        table[f"predicted_{hd.target}"] = np.round(np.asarray(predicted, float), DECIMALS)
    mlflow.log_table(table.reset_index(drop=True), "holdout/predictions.json")


def importance(model, hd, train, metric: str, seed: int = 0) -> pd.DataFrame:
    """Permutation importance of each input column on the holdout: how much the metric's
    utility drops when that column's values are shuffled (mean and std over repeats)."""
    from sklearn.inspection import permutation_importance

    m = METRICS[metric]
    classes = tuple(train.classes)
    is_clf = train.task != "regression"

    def scorer(estimator, X, y):
        return m.utility(score_output(m, np.asarray(y), model_output(estimator, X, classes,
                                                                       is_clf), classes))

    features = [c for c in train.feature_columns if c in hd.X.columns]
    result = permutation_importance(model, hd.X[features], hd.y.to_numpy(), scoring=scorer,
                                    n_repeats=IMPORTANCE_REPEATS, random_state=seed, n_jobs=1)
    table = pd.DataFrame({"column": features,
                          "importance_mean": result.importances_mean,
                          "importance_std": result.importances_std})
    return table.sort_values("importance_mean", ascending=False).reset_index(drop=True)


def _log_importance(model, hd, train, metric: str, seed: int) -> None:
    from matplotlib.figure import Figure

    table = importance(model, hd, train, metric, seed)
    mlflow.log_table(table.round(DECIMALS), "explanations/permutation_importance.json")
    shown = table.head(IMPORTANCE_SHOWN).iloc[::-1]
    fig = Figure(figsize=(6.5, 0.3 * len(shown) + 1.4), dpi=110)
    ax = fig.add_subplot()
    ax.barh(shown["column"], shown["importance_mean"], xerr=shown["importance_std"],
            color="tab:blue", alpha=0.8, capsize=2)
    ax.axvline(0, color="black", lw=0.6)
    ax.set_xlabel(f"drop in holdout {metric} when the column is shuffled")
    ax.set_title(f"Permutation importance ({IMPORTANCE_REPEATS} repeats, {hd.n_rows} holdout "
                 "rows)", fontsize=10)
    fig.tight_layout()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "permutation_importance.png"
        fig.savefig(path)
        mlflow.log_artifact(str(path), "explanations")
