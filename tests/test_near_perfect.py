"""A near-perfect CV score is quarantined when a leak could explain it and counts when the task
is that easy: a model without the columns that alone come close tells the two apart."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mlflow_agentic.core.metrics import resolve_metric
from mlflow_agentic.data import Dataset
from mlflow_agentic.engine.evaluate.cv import make_splits
from mlflow_agentic.engine.search.near_perfect import NearPerfect, earned_without_suspects, suspects
from mlflow_agentic.verify import leakage


def probe(frame: pd.DataFrame, target: str, metric: str = "roc_auc") -> str | None:
    dataset = Dataset.from_frame(frame, target, name="probe")
    splits = make_splits(dataset, 5, 0, "stratified")
    return earned_without_suspects(dataset, splits, resolve_metric(metric, dataset.task), 0.5,
                                   None)


def test_a_leaky_column_beside_weak_ones_keeps_the_quarantine():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(800, 4)), columns=["a", "b", "c", "d"])
    y = rng.random(800) < 1 / (1 + np.exp(-0.5 * frame["a"]))
    flip = rng.random(800) < 0.04  # recorded after the outcome, mostly right
    frame["refund"] = np.where(y ^ flip, "yes", "no")
    frame["churned"] = np.where(y, "Yes", "No")
    dataset = Dataset.from_frame(frame, "churned", name="leak")
    assert suspects(dataset, None) == ["refund"]
    assert probe(frame, "churned") is None


def test_many_columns_together_with_none_alone_is_earned_without_a_probe():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(600, 12)), columns=[f"x{i}" for i in range(12)])
    frame["y"] = np.where(frame.sum(axis=1) > 0, "pos", "neg")
    reason = probe(frame, "y")
    assert reason is not None and "no column alone" in reason


def test_an_easy_task_beside_a_suspect_column_is_earned_by_the_probe():
    """Two columns decide the class together (neither alone): a model without the one column
    that alone comes close still scores near-perfect."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(rng.normal(size=(1000, 3)), columns=["a", "b", "noise"])
    y = frame["a"] * frame["b"] > 0
    flip = rng.random(1000) < 0.04
    frame["telling"] = np.where(y ^ flip, 1.0, 0.0) + rng.normal(0, 0.01, 1000)
    frame["y"] = np.where(y, "same", "opposite")
    assert suspects(Dataset.from_frame(frame, "y", name="xor"), None) == ["telling"]
    reason = probe(frame, "y")
    assert reason is not None and "hist_gradient_boosting without the 1 column(s)" in reason


def test_handwritten_digits_are_that_easy_with_no_pixel_telling_every_digit_apart():
    """Some pixels single out a digit from the rest (the briefing's warning), none tells every
    digit apart: the score comes from the pixels together, with no probe."""
    from sklearn.datasets import load_digits

    digits = load_digits(as_frame=True)
    frame = digits.data.assign(digit=digits.target.map(lambda d: f"d{d}"))
    dataset = Dataset.from_frame(frame, "digit", name="digits")
    assert any(f.severity == "warning" for f in leakage.check_single_feature(dataset))
    assert suspects(dataset, None) == []
    reason = probe(frame, "digit", "roc_auc_ovr")
    assert reason is not None and "no column alone" in reason


def formula(leaky: bool) -> pd.DataFrame:
    """A target that is a formula of twelve columns (an index built from its components);
    ``region``: a coarse proxy of the target, which alone tracks it (a suspect). ``leaky``: the
    components are noise, so only ``region`` explains a near-perfect score."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(1500, 12)), columns=[f"c{i}" for i in range(12)])
    index = frame.to_numpy() @ rng.uniform(0.5, 1.5, 12) + rng.normal(0, 0.1, 1500)
    frame["region"] = np.digitize(index, np.quantile(index, np.linspace(0, 1, 40)[1:-1]))
    if leaky:
        frame[[f"c{i}" for i in range(12)]] = rng.normal(size=(1500, 12))
    return frame.assign(index=index)


def near_perfect(frame: pd.DataFrame, target: str) -> NearPerfect:
    dataset = Dataset.from_frame(frame, target, name="formula")
    splits = make_splits(dataset, 5, 0, "kfold")
    metric = resolve_metric("rmse", dataset.task)
    return NearPerfect(dataset, splits, metric, float(dataset.y.std(ddof=0)), None)


def test_a_target_that_is_a_formula_of_the_columns_is_earned_by_the_family_that_scored():
    """hfi's kind: a linear model reaches a target built from the columns, a tree model cannot;
    the family that scored, fitted without the suspect, scores near-perfect too."""
    earned = near_perfect(formula(leaky=False), "index")
    assert suspects(earned.dataset, None) == ["region"]
    assert earned([]) is None  # the fixed probe (trees) alone falls short: quarantined before
    reason = earned([("linear", {})])
    assert reason is not None and reason.startswith("linear without the 1 column(s)")
    assert earned([("hist_gradient_boosting", {"max_iter": 500})]) is None


def test_a_family_without_the_leaky_column_falls_far_below_and_the_quarantine_stands():
    leaky = near_perfect(formula(leaky=True), "index")
    assert suspects(leaky.dataset, None) == ["region"]
    assert leaky([("linear", {}), ("lightgbm", {})]) is None
