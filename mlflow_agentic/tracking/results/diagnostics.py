"""Diagnostics of the selected model on the sealed holdout, logged on its own (child) run.

MLflow's default evaluator draws what it knows (ROC, precision-recall, calibration, lift,
confusion matrix; residuals for regression) and logs its metrics with a ``holdout_`` prefix;
permutation importance explains which input columns the score depends on; the holdout
predictions are a table. A diagnostic that fails is recorded as a tag, never fatal.
"""

from __future__ import annotations

import logging
import tempfile
import time
import warnings
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
from mlflow.data.pandas_dataset import from_pandas
from mlflow.models import Model
from mlflow.pyfunc import PyFuncModel

from mlflow_agentic.core.labels import labels_of
from mlflow_agentic.core.metrics import METRICS
from mlflow_agentic.core.threads import in_background
from mlflow_agentic.core.types import is_classification
from mlflow_agentic.engine.evaluate.folds import model_output, score_output
from mlflow_agentic.tracking.registry import quiet_loggers

IMPORTANCE_REPEATS = 3
IMPORTANCE_ROWS = 5000
IMPORTANCE_MIN_ROWS = 200
IMPORTANCE_CELLS = 60_000
"""At most ``IMPORTANCE_ROWS`` holdout rows (a seeded sample), and at most this many rows in
the stacked shuffled copies (rows x columns x repeats), for permutation importance."""
IMPORTANCE_MAX_CELLS = 30_000_000
"""At most this many cells (rows x columns) predicted for permutation importance, whatever the
time budget: its copies grow with the columns squared (ten thousand columns would take minutes
and gigabytes); a wider table's importance is skipped, and the tag says so."""
IMPORTANCE_SHOWN = 15
EVALUATE_SECONDS = 2.5
"""MLflow's evaluator on 2 cores, besides its predictions: plots and metrics (measured ~2 s)."""
DECIMALS = 4


class _SklearnView:
    """The fitted pipeline seen as an sklearn-flavoured pyfunc, so the default evaluator finds
    ``predict_proba`` (the registered pyfunc wraps the same object)."""

    def __init__(self, model) -> None:
        self.model = model

    def predict(self, data, params=None):
        return self.model.predict(data)

    def get_raw_model(self):
        return _Unscored(self.model)


class _Unscored:
    """The fitted model without scikit-learn's ``score``: the evaluator would log it as
    ``holdout_score`` (accuracy, or R2, unnamed) beside the search's own holdout metric; its
    named metrics (``holdout_accuracy_score``, ``holdout_r2_score``) say the same."""

    def __init__(self, model) -> None:
        self._model = model

    def __getattr__(self, name: str):
        if name == "score":
            raise AttributeError("score: not logged (the evaluator names accuracy and R2)")
        return getattr(self._model, name)


def log_diagnostics(rec, model, train, holdout, metric: str, model_id: str | None = None,
                    seed: int = 0, deadline: float | None = None,
                    output: np.ndarray | None = None,
                    output_seconds: float = 0.0) -> dict[str, str]:
    """Evaluate ``model`` (refit on ``train``) on the ``holdout`` rows, on the active run.
    Returns tags: what was logged and how long it took, or why it was not. ``output``: the
    model's output on every holdout row, already computed (``HoldoutReport.selected_output``,
    which took ``output_seconds``): the predictions table shows it instead of predicting again
    (a second and third pass over the holdout: up to a second of a 20 s search).

    Permutation importance is computed in a thread while MLflow's evaluator draws (tree
    predictions release the GIL; the evaluator is mostly Python), then logged here. With a
    ``deadline`` (a ``time.perf_counter()`` value: a time budget), a diagnostic that would not
    finish before it is skipped, and the tag says so."""
    tags: dict[str, str] = {}
    hd = holdout.dataset
    started = time.perf_counter()
    # one prediction of every holdout row (predict and predict_proba): the unit of cost of what
    # follows
    _record(rec, tags, "predictions", started, _log_predictions, model, hd, train, output)
    predict = (2 * output_seconds if output is not None else
               (time.perf_counter() - started) * max(1.0, hd.n_rows / PREDICTION_ROWS))
    estimates = {"evaluate": EVALUATE_SECONDS + 2 * predict,
                 "importance": predict * importance_rows(hd, train) / max(hd.n_rows, 1)}

    cells = importance_rows(hd, train) * max(len(_features(hd, train)), 1)

    def fits(name: str) -> bool:
        if name == "importance" and cells > IMPORTANCE_MAX_CELLS:
            tags["diagnostics.importance"] = (
                f"skipped: {cells:,} cells to predict ({len(_features(hd, train)):,} columns, "
                f"each shuffled {IMPORTANCE_REPEATS} times), more than "
                f"{IMPORTANCE_MAX_CELLS:,}")
            return False
        if deadline is None or time.perf_counter() + estimates[name] <= deadline:
            return True
        tags[f"diagnostics.{name}"] = (f"skipped: about {estimates[name]:.0f}s, more than "
                                       "the time budget had left")
        return False

    begun = time.perf_counter()
    table = in_background("mlflow-agentic-importance", importance, model, hd, train, metric, seed) \
        if fits("importance") else None
    if fits("evaluate"):
        _record(rec, tags, "evaluate", begun, _evaluate, model, hd, train, model_id)
    if table is not None:
        _record(rec, tags, "importance", begun,
                lambda: _log_importance(table.result(), metric))
    return tags


def _record(rec, tags: dict, name: str, begun: float, step, *args) -> None:
    try:
        rec.call(f"logging holdout diagnostics ({name})", step, *args)
        tags[f"diagnostics.{name}"] = f"logged in {time.perf_counter() - begun:.1f}s"
    except Exception as exc:  # recorded, never fatal
        tags[f"diagnostics.{name}"] = f"failed: {type(exc).__name__}: {exc}"[:500]


def _evaluate(model, hd, train, model_id: str | None) -> None:
    classifier = is_classification(train.task)
    config = {"log_model_explainability": False, "metric_prefix": "holdout_"}
    if train.task == "binary":
        config["pos_label"] = train.positive_class
    data = from_pandas(hd.frame, targets=hd.target, name="holdout")
    view = PyFuncModel(Model(flavors={"python_function": {"loader_module": "mlflow.sklearn"}}),
                       _SklearnView(model))
    # the evaluator's INFO lines (active model set, label inference) are not for our users
    with warnings.catch_warnings(), quiet_loggers("mlflow", level=logging.ERROR):
        warnings.simplefilter("ignore")
        mlflow.models.evaluate(view, data, model_type="classifier" if classifier else "regressor",
                               evaluators=["default"], evaluator_config={"default": config},
                               model_id=model_id)


PREDICTION_ROWS = 20_000
"""At most this many holdout rows in the predictions table (the first ones): a table for
people; the whole holdout is scored all the same."""


def _log_predictions(model, hd, train, output: np.ndarray | None = None) -> None:
    """Holdout rows (up to ``PREDICTION_ROWS``): ID columns, the truth, the prediction (and
    probabilities). With ``output`` (the model's on every holdout row), no prediction is made:
    a class label is the most probable class, as the engine scores it (and as its ensembles
    predict)."""
    if hd.n_rows > PREDICTION_ROWS:
        hd = hd.take(np.arange(PREDICTION_ROWS))
    X = hd.X
    ids = [c for c, info in train.columns.items() if info.kind == "id" and c in X.columns]
    table = X[ids].copy() if ids else pd.DataFrame(index=X.index)
    table.insert(0, "row", np.arange(len(X)))
    table[f"actual_{hd.target}"] = hd.y.to_numpy()
    if output is not None:
        output = np.asarray(output)[: len(X)]
    classification = is_classification(train.task)
    predicted = (model.predict(X) if output is None else
                 labels_of(output, train.classes) if classification else output)
    table[f"predicted_{hd.target}"] = predicted
    if classification:
        proba = np.asarray(model.predict_proba(X) if output is None else output)
        for k, cls in enumerate(train.classes):
            table[f"probability_{cls}"] = np.round(proba[:, k], DECIMALS)
        table["correct"] = table[f"actual_{hd.target}"].astype(str) == pd.Series(
            predicted, index=table.index).astype(str)
    else:
        table[f"predicted_{hd.target}"] = np.round(np.asarray(predicted, float), DECIMALS)
    mlflow.log_table(table.reset_index(drop=True), "holdout/predictions.json")


def _features(hd, train) -> list[str]:
    inputs = set(hd.X.columns)  # once: ``X`` is a copy of the frame (29 s at 1,500 columns)
    return [c for c in train.feature_columns if c in inputs]


def importance_rows(hd, train) -> int:
    """Rows predicted for permutation importance: the sampled rows and their shuffled copies."""
    copies = 1 + len(_features(hd, train)) * IMPORTANCE_REPEATS
    sampled = min(hd.n_rows, IMPORTANCE_ROWS, max(IMPORTANCE_MIN_ROWS,
                                                  IMPORTANCE_CELLS // copies))
    return sampled * copies


def importance(model, hd, train, metric: str, seed: int = 0) -> pd.DataFrame:
    """Permutation importance of each input column on the holdout (Breiman 2001, as
    ``sklearn.inspection.permutation_importance``): how much the metric's utility drops when
    that column's values are shuffled, mean and std over repeats.

    All shuffled copies are predicted in one call instead of one call per column and repeat:
    for forests and ensembles the per-call overhead dominates (a random forest on 160 rows:
    ~0.1 s a call, 95 calls). Rows are a seeded sample so the stacked copies stay small.
    """
    m = METRICS[metric]
    classes = tuple(train.classes)
    is_clf = is_classification(train.task)
    features = _features(hd, train)
    rng = np.random.default_rng(seed)
    rows = np.arange(hd.n_rows)
    cap = importance_rows(hd, train) // (1 + len(features) * IMPORTANCE_REPEATS)
    if len(rows) > cap:
        rows = np.sort(rng.choice(rows, cap, replace=False))
    X = hd.X.iloc[rows].reset_index(drop=True)
    y = hd.y.to_numpy()[rows]

    def utility(output) -> float:
        return m.utility(score_output(m, y, output, classes))

    copies = []
    for column in features:
        for _ in range(IMPORTANCE_REPEATS):
            shuffled = X.copy()
            shuffled[column] = X[column].to_numpy()[rng.permutation(len(X))]
            copies.append(shuffled)
    outputs = model_output(model, pd.concat([X, *copies], ignore_index=True), classes, is_clf)
    n = len(X)
    base = utility(outputs[:n])
    drops = np.array([base - utility(outputs[(k + 1) * n:(k + 2) * n])
                      for k in range(len(copies))]).reshape(len(features), IMPORTANCE_REPEATS)
    table = pd.DataFrame({"column": features, "importance_mean": drops.mean(axis=1),
                          "importance_std": drops.std(axis=1)})
    table.attrs["rows"], table.attrs["of"] = n, hd.n_rows
    return table.sort_values("importance_mean", ascending=False).reset_index(drop=True)


def _log_importance(table: pd.DataFrame, metric: str) -> None:
    from matplotlib.figure import Figure

    mlflow.log_table(table.round(DECIMALS), "explanations/permutation_importance.json")
    shown = table.head(IMPORTANCE_SHOWN).iloc[::-1]
    fig = Figure(figsize=(6.5, 0.3 * len(shown) + 1.4), dpi=110)
    ax = fig.add_subplot()
    ax.barh(shown["column"], shown["importance_mean"], xerr=shown["importance_std"],
            color="tab:blue", alpha=0.8, capsize=2)
    ax.axvline(0, color="black", lw=0.6)
    ax.set_xlabel(f"drop in holdout {metric} when the column is shuffled")
    rows, of = table.attrs["rows"], table.attrs.get("of", table.attrs["rows"])
    sample = f"all {of} holdout rows" if rows >= of else \
        f"a seeded sample of {rows} of the {of} holdout rows"
    ax.set_title(f"Permutation importance ({IMPORTANCE_REPEATS} repeats, {sample})",
                 fontsize=10)
    fig.tight_layout()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "permutation_importance.png"
        fig.savefig(path)
        mlflow.log_artifact(str(path), "explanations")
