"""Trainers build unfitted pipelines whose defaults lie in their (data-scaled) spaces."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from mlflow_agentic.core.errors import ProposerOutputError, UserInputError
from mlflow_agentic.data import Dataset
from mlflow_agentic.trainers import get_trainer, resolve_trainers, trainer_registry

BUILTIN = ["linear", "random_forest", "extra_trees", "hist_gradient_boosting", "xgboost",
           "lightgbm"]


def frame(task: str, n: int = 150, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    df = pd.DataFrame({"x": x, "cat": rng.choice(["a", "b", "c"], n),
                       "text_num": [" " if i % 17 == 0 else f"{v:.2f}" for i, v in enumerate(x)]})
    if task == "regression":
        df["target"] = 3 * x + rng.normal(size=n)
    elif task == "binary":
        df["target"] = np.where(x + rng.normal(size=n) > 0, "yes", "no")
    else:
        df["target"] = np.digitize(x, [-0.5, 0.5])
    return df


def test_builtins_are_registered():
    assert set(BUILTIN) <= set(trainer_registry())


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("name", BUILTIN)
def test_unfitted_pipeline_fits_and_predicts(name, task):
    ds = Dataset.from_frame(frame(task))
    trainer = get_trainer(name)
    pipe = trainer.pipeline(ds, {}, random_state=0)
    with pytest.raises(NotFittedError):
        check_is_fitted(pipe)
    pipe.fit(ds.X, ds.y)
    pred = pipe.predict(ds.X.head(10))
    assert len(pred) == 10
    if task == "binary":
        assert set(pred) <= {"yes", "no"}  # original labels, even for xgboost
        assert pipe.predict_proba(ds.X.head(10)).shape == (10, 2)


@pytest.mark.parametrize("name", BUILTIN)
def test_defaults_lie_in_the_space_that_scales_with_rows(name):
    small = Dataset.from_frame(frame("binary", n=200))
    large = Dataset.from_frame(frame("binary", n=60_000))
    trainer = get_trainer(name)
    for ds in (small, large):
        space, defaults = trainer.space(ds), trainer.defaults(ds)
        assert set(defaults) == set(space)
        for key, value in defaults.items():
            assert space[key].contains(value), (name, key, value, space[key])
    if name != "linear":
        assert trainer.space(small) != trainer.space(large)


def test_params_are_checked_with_the_valid_names():
    ds = Dataset.from_frame(frame("binary"))
    xgb = get_trainer("xgboost")
    assert xgb.resolve_params(ds, {"max_depth": "4"})["max_depth"] == 4
    with pytest.raises(ProposerOutputError, match="unknown parameter 'depth'.*Valid: .*max_depth"):
        xgb.resolve_params(ds, {"depth": 4})
    with pytest.raises(ProposerOutputError, match="expected an integer"):
        xgb.resolve_params(ds, {"max_depth": 4.5})


def test_trainer_selection_is_checked():
    assert resolve_trainers(["xgboost", "linear"], "binary") == ["xgboost", "linear"]
    with pytest.raises(UserInputError, match="unknown trainer 'xgbost'.*Did you mean 'xgboost'"):
        resolve_trainers(["xgbost"], "binary")
