"""Trainers build unfitted pipelines whose defaults lie in their (data-scaled) spaces."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from mlflow_agentic.core.errors import ProposerOutputError, UserInputError
from mlflow_agentic.data import Dataset
from mlflow_agentic.trainers import get_trainer, resolve_trainers, trainer_registry
from mlflow_agentic.trainers.preprocessing import value_bins
from mlflow_agentic.trainers.transforms import binning_booster

BUILTIN = ["linear", "random_forest", "extra_trees", "hist_gradient_boosting", "xgboost",
           "lightgbm", "catboost", "mlp"]


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


def test_catboost_is_searched_by_default_and_stops_early():
    assert "catboost" in resolve_trainers(None, "binary")
    assert resolve_trainers(["catboost", "linear"], "regression") == ["catboost", "linear"]
    ds = Dataset.from_frame(frame("binary", n=400))
    pipe = get_trainer("catboost").pipeline(ds, {}).fit(ds.X, ds.y)
    model = pipe.named_steps["model"]  # stopped early on its own validation rows, like the others
    assert model.estimator_.tree_count_ < get_trainer("catboost").defaults(ds)["iterations"]
    assert model.estimator_.get_cat_feature_indices() == list(model.categorical)  # "cat"


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


@pytest.mark.parametrize("name", ["hist_gradient_boosting", "lightgbm", "catboost"])
def test_boosters_split_on_categories_not_on_their_codes_order(name):
    """A category's effect that no order of its codes makes monotone: a booster told the codes
    are categories finds it in a few splits; on codes alone it needs many. High-cardinality
    columns (over 254 levels) are target encoded, after the category columns."""
    rng = np.random.default_rng(0)
    n = 3000
    levels = [f"c{i:02d}" for i in range(40)]
    effect = dict(zip(levels, rng.permutation([0.0, 3.0] * 20), strict=True))
    df = pd.DataFrame({"x": rng.normal(size=n), "city": rng.choice(levels, n),
                       "id_like": [f"u{i % 400}" for i in range(n)]})
    df["target"] = df["city"].map(effect) + 0.5 * df["x"] + rng.normal(scale=0.3, size=n)
    ds = Dataset.from_frame(df.iloc[:2000], target="target")
    test = df.iloc[2000:]
    rounds = {"hist_gradient_boosting": "max_iter", "catboost": "iterations"}.get(
        name, "n_estimators")
    pipe = get_trainer(name).pipeline(ds, {"learning_rate": 0.3, rounds: 3})
    names = list(pipe[:-1].fit(ds.X, ds.y).get_feature_names_out())
    model = pipe.named_steps["model"]
    marked = (model.categorical_features if name == "hist_gradient_boosting"
              else list(model.categorical))
    assert names[-1] == "id_like" and [names[i] for i in marked] == ["city"]  # 400 levels

    def rmse(pipeline) -> float:
        predicted = pipeline.fit(ds.X, ds.y).predict(test.drop(columns="target"))
        return float(np.sqrt(np.mean((predicted - test["target"]) ** 2)))

    codes = clone(pipe)
    codes.named_steps["model"].set_params(**(
        {"categorical_features": None} if name == "hist_gradient_boosting"
        else {"categorical": None}))
    assert rmse(pipe) < 0.85 * rmse(codes)


def coded(n: int, codes: int, seed: int = 0) -> pd.DataFrame:
    """A regression target carried by a whole-number ``school`` code of ``codes`` values whose
    effects follow no order of the codes (as a school's number says nothing of its results)."""
    rng = np.random.default_rng(seed)
    effect = rng.normal(scale=1.0, size=codes)
    school = rng.integers(1000, 1000 + codes, n)
    x = rng.normal(size=n)
    return pd.DataFrame({"school": school, "x": x,
                         "target": effect[school - 1000] + 0.5 * x + rng.normal(scale=0.3, size=n)})


def test_code_columns_get_a_bin_per_value_other_columns_keep_the_default():
    assert value_bins(Dataset.from_frame(coded(6000, 800), target="target")) == 801
    few_rows = Dataset.from_frame(coded(3000, 800), target="target")  # under 5 rows a value
    assert value_bins(few_rows) is None
    measured = coded(6000, 800)
    measured["school"] = measured["school"] + 0.5  # not whole numbers: a measurement
    assert value_bins(Dataset.from_frame(measured, target="target")) is None
    assert value_bins(Dataset.from_frame(coded(6000, 200), target="target")) is None  # <= 255


@pytest.mark.parametrize("name", ["lightgbm", "xgboost"])
def test_boosters_learn_each_code_of_a_code_column_with_many_values(name):
    """800 school codes, 10 rows each: with 255 quantile bins neighbouring schools share a bin
    and their effects are averaged; with a bin per code the booster separates them."""
    df = coded(10_000, 800)
    ds, test = Dataset.from_frame(df.iloc[:8000], target="target"), df.iloc[8000:]
    pipe = get_trainer(name).pipeline(ds, {"learning_rate": 0.1})
    assert binning_booster(pipe.named_steps["model"]).get_params()["max_bin"] == 801

    def rmse(pipeline) -> float:
        predicted = pipeline.fit(ds.X, ds.y).predict(test.drop(columns="target"))
        return float(np.sqrt(np.mean((predicted - test["target"]) ** 2)))

    default = clone(pipe)
    binning_booster(default.named_steps["model"]).set_params(max_bin=255)
    assert rmse(pipe) < 0.85 * rmse(default)


def sponsored(n: int, levels: int, seed: int, signal: bool = True) -> pd.DataFrame:
    """A binary label carried by a ``sponsor`` column of many levels (each level's positive
    rate 15% or 85%; with ``signal`` False, the label is a coin flip), and a noise column."""
    rng = np.random.default_rng(seed)
    names = [f"s{i:03d}" for i in range(levels)]
    rate = dict(zip(names, rng.choice([0.15, 0.85], levels), strict=True))
    sponsor = rng.choice(names, n)
    p = np.array([rate[s] for s in sponsor]) if signal else np.full(n, 0.5)
    return pd.DataFrame({"sponsor": sponsor, "noise": rng.normal(size=n),
                         "target": np.where(rng.random(n) < p, "yes", "no")})


def test_columns_with_more_levels_than_one_hot_takes_are_target_encoded(monkeypatch):
    """60 levels that carry the label: one-hot keeps 19 of them and lumps the rest, so a
    linear model sees little of it; the target encoding gives it every level."""
    from sklearn.metrics import roc_auc_score

    from mlflow_agentic.trainers import preprocessing

    df = sponsored(1600, 60, seed=1)
    ds = Dataset.from_frame(df.iloc[:1000], target="target")
    test = df.iloc[1000:]

    def auc() -> float:
        pipe = get_trainer("linear").pipeline(ds).fit(ds.X, ds.y)
        return roc_auc_score(test["target"] == "yes",
                             pipe.predict_proba(test.drop(columns="target"))[:, 1])

    encoded = auc()
    monkeypatch.setattr(preprocessing, "levelled",
                        lambda dataset, style: (dataset.columns_of("categorical"), []))
    assert encoded > 0.8 and encoded > auc() + 0.05


@pytest.mark.search
def test_target_encoding_never_sees_the_labels_a_fold_is_scored_on(tracking_uri):
    """A 300-level column with no signal, about 3 rows a level: an encoding fitted with the
    scored rows' labels would score far above chance. Every fold fits it on its training rows
    only, so the cross-validated score stays at chance and the verifier refuses it."""
    from mlflow_agentic import SequenceProposer, SolutionCandidate
    from mlflow_agentic.frontdoor.orchestrator import run_search

    ds = Dataset.from_frame(sponsored(1000, 300, seed=2, signal=False).drop(columns="noise"),
                            target="target")
    assert ds.columns["sponsor"].is_feature
    result = run_search(ds, lambda: SequenceProposer([SolutionCandidate("linear", {}),
                                                      SolutionCandidate("lightgbm", {})]),
                        max_iterations=2, cv=3, ensemble=False, refit=False)
    scores = [a.score for a in result.run.attempts]
    assert len(scores) == 2 and all(abs(score - 0.5) < 0.08 for score in scores)
