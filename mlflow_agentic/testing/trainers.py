"""``check_trainer(trainer)``: does a trainer keep the engine's contract?

A trainer (the one entry-point extension, ``mlflow_agentic.trainers``) is checked on small tables
of each task it declares, each with a numeric column, a text category and missing values in
both (what real files hold), as scikit-learn's ``check_estimator`` checks an estimator:

- ``declares_itself``: a name, a preprocessing style the engine has, tasks among binary,
  multiclass and regression, a whole ``cost`` from 1 to 3.
- ``space_holds_its_defaults``: ``defaults(dataset)`` names only parameters of
  ``space(dataset)``, each inside it (Optuna is seeded with them).
- ``fits_and_predicts``: the unfitted pipeline fits each task's table (missing values and the
  category included) and predicts one value per row; a classifier's probabilities have one
  column per class and sum to 1, and its labels are among the classes.
- ``fits_the_edges_of_its_space``: every parameter at its lowest and at its highest (a
  categorical: each choice) still fits.
- ``is_single_threaded``: no thread-count parameter above 1 (the engine runs one model per
  core; a model with threads of its own fights the others).
- ``is_seeded``: two fits with the same seed predict the same.
- ``is_picklable``: the fitted pipeline survives a pickle round trip, predicting the same (the
  worker pool and the logged model both pickle it).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from mlflow_agentic.data import Dataset
from mlflow_agentic.engine.workers.parallel import THREAD_PARAMS
from mlflow_agentic.trainers import CategoricalParam, Trainer
from mlflow_agentic.trainers.base import ALL_TASKS
from mlflow_agentic.trainers.preprocessing import STYLES

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline


class TrainerCheckFailed(AssertionError):
    """A trainer broke the engine's contract: the message names the check and what was seen."""


def kit_table(task: str, rows: int = 160, seed: int = 0) -> Dataset:
    """A small table of ``task``: a signal column and a text category, each with missing
    values, and a target that depends on both."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=rows)
    colour = rng.choice(["red", "green", "blue"], rows).astype(object)
    signal = x + np.where(colour == "red", 1.0, 0.0) + rng.normal(scale=0.5, size=rows)
    frame = pd.DataFrame({"x": x, "noise": rng.normal(size=rows), "colour": colour})
    frame.loc[frame.index % 11 == 0, "x"] = np.nan
    frame.loc[frame.index % 13 == 0, "colour"] = None
    if task == "regression":
        frame["target"] = 3 * signal
    elif task == "binary":
        frame["target"] = np.where(signal > 0.3, "yes", "no")
    else:
        frame["target"] = np.select([signal < -0.3, signal < 0.8], ["low", "mid"], "high")
    return Dataset.from_frame(frame, "target", name=f"kit-{task}", task=task)


class _Kit:
    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        self.tables = {t: kit_table(t) for t in sorted(trainer.tasks & ALL_TASKS)}

    def fail(self, check: str, what: str) -> None:
        raise TrainerCheckFailed(f"trainer {self.trainer.name!r}, {check}: {what}")

    def fitted(self, task: str, params: dict | None = None, seed: int = 0) -> Pipeline:
        ds = self.tables[task]
        return self.trainer.pipeline(ds, params or {}, seed).fit(ds.X, ds.y)


def declares_itself(kit: _Kit) -> None:
    t = kit.trainer
    if not isinstance(t.name, str) or not t.name.strip():
        kit.fail("declares_itself", f"name {t.name!r}: give it a name")
    if t.preprocessing not in STYLES:
        kit.fail("declares_itself", f"preprocessing {t.preprocessing!r}; valid: "
                                    f"{', '.join(STYLES)}")
    if not t.tasks or not set(t.tasks) <= ALL_TASKS:
        kit.fail("declares_itself", f"tasks {sorted(t.tasks)}; valid: {sorted(ALL_TASKS)}")
    if isinstance(t.cost, bool) or not isinstance(t.cost, int) or not 1 <= t.cost <= 3:
        kit.fail("declares_itself", f"cost {t.cost!r}: a whole number from 1 (cheap) to 3")


def space_holds_its_defaults(kit: _Kit) -> None:
    for task, ds in kit.tables.items():
        space, defaults = kit.trainer.space(ds), kit.trainer.defaults(ds)
        unknown = sorted(set(defaults) - set(space))
        if unknown:
            kit.fail("space_holds_its_defaults", f"{task}: defaults {unknown} are not in its "
                                                 "space")
        outside = [f"{k}={v!r} ({space[k].describe()})" for k, v in defaults.items()
                   if not space[k].contains(v)]
        if outside:
            kit.fail("space_holds_its_defaults", f"{task}: defaults outside the space: "
                                                 f"{', '.join(outside)}")


def fits_and_predicts(kit: _Kit) -> None:
    for task, ds in kit.tables.items():
        try:
            model = kit.fitted(task)
            predicted = np.asarray(model.predict(ds.X))
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            kit.fail("fits_and_predicts", f"{task} (missing values and a text category): "
                                          f"{type(exc).__name__}: {exc}")
        if predicted.shape[0] != ds.n_rows:
            kit.fail("fits_and_predicts", f"{task}: {predicted.shape[0]} predictions for "
                                          f"{ds.n_rows} rows")
        if task == "regression":
            continue
        proba = np.asarray(model.predict_proba(ds.X), dtype=float)
        if proba.shape != (ds.n_rows, len(ds.classes)):
            kit.fail("fits_and_predicts", f"{task}: probabilities of shape {proba.shape}, "
                                          f"expected {(ds.n_rows, len(ds.classes))}")
        if not np.allclose(proba.sum(axis=1), 1.0, atol=1e-6):
            kit.fail("fits_and_predicts", f"{task}: probabilities do not sum to 1")
        strange = set(map(str, predicted)) - set(map(str, ds.classes))
        if strange:
            kit.fail("fits_and_predicts", f"{task}: labels {sorted(strange)} are not classes")


def fits_the_edges_of_its_space(kit: _Kit) -> None:
    for task, ds in kit.tables.items():
        for name, spec in kit.trainer.space(ds).items():
            values = (list(spec.choices) if isinstance(spec, CategoricalParam)
                      else [spec.low, spec.high])
            for value in values:
                try:
                    kit.fitted(task, {name: value})
                except Exception as exc:  # noqa: BLE001 - any failure is the finding
                    kit.fail("fits_the_edges_of_its_space", f"{task}: {name}={value!r} "
                                                            f"({type(exc).__name__}: {exc})")


def is_single_threaded(kit: _Kit) -> None:
    for task, ds in kit.tables.items():
        model = kit.trainer.pipeline(ds, {}, 0).named_steps["model"]
        threads = {k: v for k, v in model.get_params(deep=True).items()
                   if k.rsplit("__", 1)[-1] in THREAD_PARAMS and v not in (None, 1)}
        if threads:
            kit.fail("is_single_threaded", f"{task}: {threads}; set them to 1 (the engine runs "
                                           "one model per core)")


def is_seeded(kit: _Kit) -> None:
    for task, ds in kit.tables.items():
        first, second = (_output(kit.fitted(task, seed=3), ds, task) for _ in range(2))
        if not np.allclose(first, second, equal_nan=True):
            kit.fail("is_seeded", f"{task}: two fits with seed 3 predict differently; pass "
                                  "the random_state given to build_model to the model")


def is_picklable(kit: _Kit) -> None:
    for task, ds in kit.tables.items():
        model = kit.fitted(task)
        try:
            again = pickle.loads(pickle.dumps(model))
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            kit.fail("is_picklable", f"{task}: {type(exc).__name__}: {exc}")
        if not np.allclose(_output(model, ds, task), _output(again, ds, task), equal_nan=True):
            kit.fail("is_picklable", f"{task}: the unpickled model predicts differently")


def _output(model: Any, ds: Dataset, task: str) -> np.ndarray:
    if task == "regression":
        return np.asarray(model.predict(ds.X), dtype=float)
    return np.asarray(model.predict_proba(ds.X), dtype=float)


CHECKS: dict[str, Callable[[_Kit], None]] = {
    f.__name__: f for f in (declares_itself, space_holds_its_defaults, fits_and_predicts,
                            fits_the_edges_of_its_space, is_single_threaded, is_seeded,
                            is_picklable)}


def check_trainer(trainer: Trainer, checks: Sequence[str] | None = None) -> list[str]:
    """Run ``checks`` (default: all, in order) on ``trainer``; returns the names passed.
    Raises ``TrainerCheckFailed`` at the first broken one, naming it and what was seen."""
    from threadpoolctl import threadpool_limits

    kit = _Kit(trainer)
    names = list(checks or CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; valid: {', '.join(CHECKS)}")
    with threadpool_limits(1):
        for name in names:
            CHECKS[name](kit)
    return names
