"""The sealed split: by time, by group, stratified, duplicates kept together; bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.data import Dataset
from mlflow_agentic.data.split import seal_holdout


def frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "x": rng.normal(size=n), "cat": rng.choice(list("abc"), n),
        "day": pd.date_range("2023-01-01", periods=n, freq="D").strftime("%Y-%m-%d")[
            rng.permutation(n)],
        "site": [f"s{i % 10}" for i in range(n)], "after": rng.normal(size=n),
        "target": rng.choice(["yes", "no"], n, p=[0.3, 0.7])})


def test_time_split_holds_out_the_latest_rows():
    ds = Dataset.from_frame(frame())
    train, holdout = seal_holdout(ds, time_column="day")
    assert holdout.scheme == "time" and holdout.n_rows == 80 and train.n_rows == 320
    assert train.frame["day"].max() < holdout.dataset.frame["day"].min()
    assert train.time_column == "day"


def test_group_split_holds_out_whole_groups():
    ds = Dataset.from_frame(frame())
    train, holdout = seal_holdout(ds, group_column="site")
    assert not set(train.frame["site"]) & set(holdout.dataset.frame["site"])
    assert holdout.scheme == "group" and train.group_column == "site"


def test_default_split_is_stratified_and_blanks_post_outcome_columns():
    ds = Dataset.from_frame(frame())
    train, holdout = seal_holdout(ds, post_outcome_columns=["after"], holdout_fraction=0.25)
    assert holdout.scheme == "stratified" and holdout.n_rows == 100
    assert abs((holdout.dataset.y == "yes").mean() - (train.y == "yes").mean()) < 0.02
    assert holdout.dataset.frame["after"].isna().all() and train.frame["after"].notna().all()


def test_near_duplicates_never_straddle_the_holdout():
    base = frame(200)
    dup = pd.concat([base] * 3, ignore_index=True).sample(frac=1.0, random_state=0)
    ds = Dataset.from_frame(dup.drop(columns=["day"]).reset_index(drop=True))
    train, holdout = seal_holdout(ds)
    assert holdout.scheme == "near-duplicate clusters" and train.cv_groups is not None
    key = ["x", "cat", "site", "after"]
    seen = set(map(tuple, train.frame[key].round(6).to_numpy()))
    assert not any(tuple(r) in seen for r in holdout.dataset.frame[key].round(6).to_numpy())


@pytest.mark.parametrize("kwargs, fragment", [
    ({"time_column": "when"}, "unknown time column 'when'"),
    ({"group_column": "shop"}, "unknown group column 'shop'"),
    ({"post_outcome_columns": ["later"]}, "unknown post-outcome column(s) 'later'"),
    ({"holdout_fraction": 0.6}, "holdout fraction must be in (0, 0.5], got 0.6"),
    ({"holdout_fraction": 0}, "holdout fraction must be in (0, 0.5], got 0"),
    ({"time_column": "cat"}, "time column 'cat' does not parse as dates"),
    ({"group_column": "few"}, "has 3 groups; at least 4"),
])
def test_bad_split_options_name_the_value(kwargs, fragment):
    df = frame()
    df["few"] = [f"g{i % 3}" for i in range(len(df))]
    with pytest.raises(UserInputError) as err:
        seal_holdout(Dataset.from_frame(df), **kwargs)
    assert fragment in str(err.value)
