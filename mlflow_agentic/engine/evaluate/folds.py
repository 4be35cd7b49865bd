"""Fixed CV folds with their preprocessing done once, and the work one fold of one candidate does.

Preprocessing (column coercion, imputation, encoding, scaling) has no hyperparameters: for a
given style it is the same for every candidate. So each fold's preprocessor is fitted once per
style on that fold's training rows only (nothing learned from the rows it is scored on) and its
matrices are shared by every candidate that uses the style. Candidates then fit only their model.
"""

from __future__ import annotations

import shutil
import threading
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.pipeline import Pipeline

from mlflow_agentic.core.labels import labels_of
from mlflow_agentic.core.metrics import Metric
from mlflow_agentic.engine.evaluate import spill as disk
from mlflow_agentic.engine.evaluate.spill import SPILL_BYTES, ship, spill_folder
from mlflow_agentic.trainers.preprocessing import build_preprocessor

if TYPE_CHECKING:
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.engine.workers.parallel import WorkerPool


@dataclass(frozen=True)
class FoldMatrices:
    """One fold, preprocessed in one style: train, test and the extra rows (may be None).
    ``files``: where the arrays are when spilled (``spill``); it then pickles as those paths."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    X_extra: np.ndarray | None
    files: tuple[str | None, ...] | None = None

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._arrays() if a is not None)

    def _arrays(self) -> tuple:
        return self.X_train, self.y_train, self.X_test, self.X_extra

    def spill(self, folder: str | Path | None, name: str,
              at_bytes: int = SPILL_BYTES) -> FoldMatrices:
        """These matrices as files in ``folder`` (named ``name-<part>.npy``), memory-mapped,
        when they are big enough to be worth it (``at_bytes``); else unchanged."""
        if folder is None or self.files is not None or self.nbytes < at_bytes:
            return self
        files = []
        for part, array in zip(("train", "y", "test", "extra"), self._arrays(), strict=True):
            path = None
            if array is not None:
                path = str(Path(folder) / f"{name}-{part}.npy")
                np.save(path, array, allow_pickle=array.dtype == object)
            files.append(path)
        return _mapped(tuple(files))

    def __reduce_ex__(self, protocol: Any) -> tuple:
        if self.files is None:
            return FoldMatrices, self._arrays()
        return _mapped, (self.files,)


def _mapped(files: tuple[str | None, ...]) -> FoldMatrices:
    """Spilled matrices, mapped copy-on-write (a model that writes to its input gets its own
    page, never the file's); labels of any type are read whole."""
    X_train, y_train, X_test, X_extra = (
        None if f is None else np.load(f, mmap_mode=None if i == 1 else "c", allow_pickle=i == 1)
        for i, f in enumerate(files))
    assert X_train is not None and y_train is not None and X_test is not None
    return FoldMatrices(X_train, y_train, X_test, X_extra, files=files)


class FoldData:
    """The search's fixed splits, with a per-style cache of preprocessed fold matrices.

    ``extra_X``: features of rows to predict with every fold model (the caller scores them; the
    engine never has their labels).
    """

    def __init__(self, dataset: Dataset, splits: Iterable[tuple[Any, Any]],
                 extra_X: pd.DataFrame | None = None,
                 spill: bool = False) -> None:
        self.dataset = dataset
        self.spill_to = spill_folder() if spill else None
        """Where big fold matrices go (``FoldMatrices.spill``): only for workers on this
        machine, which can read its files."""
        if self.spill_to is not None:
            weakref.finalize(self, shutil.rmtree, self.spill_to, ignore_errors=True)
        self.spill_bytes = SPILL_BYTES
        self.splits = [(np.asarray(tr), np.asarray(te)) for tr, te in splits]
        self.extra_X = extra_X
        self.y = dataset.y.to_numpy()
        self._cache: dict[str, list[FoldMatrices]] = {}
        self._steps: dict[str, object] = {}
        """Fold preprocessing read back for bagging (``{style}-{k}`` -> fitted steps)."""
        self._lock = threading.Lock()
        self.preprocess_seconds = 0.0
        """Wall time preparing every style's folds (what the search spent on it)."""
        self._fold_seconds: dict[str, float] = {}
        """Per style: one fold's preprocessing, timed where it ran (what a refit repeats)."""

    @classmethod
    def for_pool(cls, dataset: Dataset, splits: Iterable[tuple[Any, Any]],
                 extra_X: pd.DataFrame | None, pool: WorkerPool) -> FoldData:
        """Big folds go to files the workers map when the workers are on this machine."""
        return cls(dataset, splits, extra_X, spill=pool.n_jobs > 1 and pool.backend == "local")

    @property
    def n_splits(self) -> int:
        return len(self.splits)

    def model_file(self, index: int, fold: int) -> str | None:
        """Where a worker keeps attempt ``index``'s fitted model of ``fold`` (None: not kept,
        the workers are not on this machine)."""
        return disk.model_file(self.spill_to, index, fold)

    def model_mb(self, index: int) -> float | None:
        """The size (MB) of one of attempt ``index``'s fold models (None: not kept)."""
        return disk.model_megabytes(self.spill_to, index, self.n_splits)

    def fold_pipelines(self, index: int, style: str) -> list[Pipeline] | None:
        """Attempt ``index``'s fold models, each behind the preprocessing fitted on its fold's
        rows: what the average of the fold models serves. None when any is not kept. Attempts
        of one style share each fold's preprocessing object: a bagged ensemble pickles it once
        per fold, not once per member."""
        pipelines = []
        for k in range(self.n_splits):
            steps = self._fold_steps(style, k)
            model = disk.load(self.model_file(index, k))
            if steps is None or model is None:
                return None
            pipelines.append(Pipeline([*steps.steps, ("model", model)]))
        return pipelines

    def _fold_steps(self, style: str, k: int) -> Any:
        key = f"{style}-{k}"
        if self._steps.get(key) is None:
            self._steps[key] = disk.load(disk.steps_file(self.spill_to, key))
        return self._steps[key]

    def keep_models_of(self, indices: set[int], upto: int) -> None:
        """Of the attempts up to ``upto``, only these keep their fold models on disk."""
        disk.forget_models(self.spill_to, indices, upto)

    def matrices(self, style: str) -> list[FoldMatrices]:
        """The folds preprocessed in ``style`` (computed here if ``prepare`` did not)."""
        with self._lock:
            if style not in self._cache:
                start = time.perf_counter()
                timed = [timed_preprocess(self.dataset, style, tr, te, self.extra_X,
                                          self.spill_to, f"{style}-{k}", self.spill_bytes)
                         for k, (tr, te) in enumerate(self.splits)]
                self._keep(style, timed)
                self.preprocess_seconds += time.perf_counter() - start
            return self._cache[style]

    def fold_preprocess_seconds(self, style: str | None) -> float:
        """One fold's preprocessing in ``style`` (0 when not prepared here, e.g. code mode,
        whose pipeline preprocesses inside its fit): a refit in that style repeats it on all
        the rows, and only that style's (preparing every style took longer)."""
        return self._fold_seconds.get(style, 0.0) if style is not None else 0.0

    def _keep(self, style: str, timed: list[tuple[float, FoldMatrices]]) -> None:
        self._cache[style] = [matrices for _, matrices in timed]
        self._fold_seconds[style] = sum(seconds for seconds, _ in timed) / max(len(timed), 1)

    def prepared(self, style: str | None) -> bool:
        """True when ``style``'s folds are preprocessed (``matrices`` returns at once)."""
        return style in self._cache

    def prepare(self, styles: Iterable[str], pool: WorkerPool,
                deadline: float | None = None) -> None:
        """Preprocess the missing ``styles``, every (style, fold) a task on ``pool``, styles in
        the order given. At ``deadline`` (a ``time.perf_counter()`` value) what is still
        running is stopped and the styles not finished stay unprepared: a wide table's
        preprocessing (1,442 columns, three styles: 8.6 s) must not run the command past its
        budget."""
        missing = [s for s in dict.fromkeys(styles) if s not in self._cache]
        if not missing:
            return
        start = time.perf_counter()
        jobs = [(s, k) for s in missing for k in range(self.n_splits)]
        dataset = ship(self.dataset, self.spill_to, "dataset", self.spill_bytes)
        extra = ship(self.extra_X, self.spill_to, "extra", self.spill_bytes)
        futures = [pool.submit(timed_preprocess, dataset, s, *self.splits[k], extra,
                               self.spill_to, f"{s}-{k}", self.spill_bytes)
                   for s, k in jobs]
        results: dict[tuple[str, int], tuple[float, FoldMatrices]] = {}
        for i, future in pool.in_order(futures, deadline):
            if future is None:  # the deadline passed: stop the rest
                pool.abort([f for f in futures if not f.done()])
                break
            results[jobs[i]] = future.result()
        with self._lock:
            for s in missing:
                if all((s, k) in results for k in range(self.n_splits)):
                    self._keep(s, [results[(s, k)] for k in range(self.n_splits)])
        self.preprocess_seconds += time.perf_counter() - start


def preprocess_fold(dataset: Dataset, style: str, train: np.ndarray, test: np.ndarray,
                    extra_X: pd.DataFrame | None = None, spill_to: str | None = None,
                    name: str = "fold", spill_bytes: int = SPILL_BYTES) -> FoldMatrices:
    """Fit the ``style`` preprocessing on the fold's training rows; transform its rows (a worker
    task: the fitted preprocessor stays in the worker, the matrices come back, or only their
    file names when they are big and ``spill_to`` is a folder)."""
    from mlflow_agentic.trainers.transforms import InputColumns

    X, y = dataset.X, dataset.y.to_numpy()
    steps = Pipeline([("inputs", InputColumns(unused=sorted(dataset.excluded_columns))),
                      ("preprocess", build_preprocessor(dataset, style))])
    X_train = _dense(steps.fit_transform(X.iloc[train], y[train]))
    disk.keep(steps, disk.steps_file(spill_to, name))  # the fold models' front, to serve them
    extra = None if extra_X is None else _dense(steps.transform(extra_X))
    return FoldMatrices(X_train, y[train], _dense(steps.transform(X.iloc[test])),
                        extra).spill(spill_to, name, spill_bytes)


def timed_preprocess(*args: Any) -> tuple[float, FoldMatrices]:
    """``preprocess_fold`` and its seconds, timed where it ran (a worker task)."""
    start = time.perf_counter()
    matrices = preprocess_fold(*args)
    return time.perf_counter() - start, matrices


def _dense(matrix: Any) -> np.ndarray:
    if hasattr(matrix, "toarray"):
        matrix = matrix.toarray()
    return np.ascontiguousarray(np.asarray(matrix, dtype=float))


@dataclass(frozen=True)
class FoldOutput:
    """What one fold fit returns: timings and predictions (never the model: it stays in the
    worker, so a 70 MB forest is not shipped back for each fold)."""

    fit_seconds: float
    """Fitting and predicting (the fold's test rows and the extra rows): model work."""
    test: np.ndarray
    extra: np.ndarray | None


def fit_fold(model: Any, fold: FoldMatrices, classes: tuple, classification: bool,
             keep: str | None = None) -> FoldOutput:
    """Fit ``model`` on the fold's training matrix; predict its test rows and the extra rows.

    Runs in a worker process (or in-process with one job). Classification returns class
    probabilities aligned to ``classes``; regression returns predictions. ``keep``: a file for
    the fitted model (the average of the fold models may be served instead of a refit).
    """
    start = time.perf_counter()
    model.fit(fold.X_train, fold.y_train)
    test = model_output(model, fold.X_test, classes, classification)
    extra = None if fold.X_extra is None else model_output(model, fold.X_extra, classes,
                                                           classification)
    output = FoldOutput(time.perf_counter() - start, test, extra)
    disk.keep(model, keep)  # after the timing: the fit's cost plans the refit
    return output


def model_output(model: Any, X: Any, classes: tuple, classification: bool) -> np.ndarray:
    """Probabilities aligned to ``classes`` (absent classes: zeros), or regression predictions.
    A classifier without ``predict_proba`` gives one-hot rows of its labels."""
    if not classification:
        return np.asarray(model.predict(X), dtype=float)
    if not hasattr(model, "predict_proba"):
        labels = np.asarray(model.predict(X))
        return np.column_stack([(labels == c).astype(float) for c in classes])
    raw = np.asarray(model.predict_proba(X), dtype=float)
    fitted = list(getattr(model, "classes_", classes))
    if fitted == list(classes):
        return raw
    proba = np.zeros((raw.shape[0], len(classes)))
    for j, cls in enumerate(fitted):
        proba[:, list(classes).index(cls)] = raw[:, j]
    return proba


def score_output(metric: Metric, y_true: Any, output: np.ndarray, classes: tuple) -> float:
    """The metric from a model output: labels are the most probable class."""
    y_true = np.asarray(y_true)
    if output.ndim == 1:
        return metric.score(y_true, output, None, classes)
    labels = labels_of(output, classes)
    if y_true.dtype != object:
        labels = labels.astype(y_true.dtype)
    return metric.score(y_true, labels, output, classes)
