"""The paired bootstrap's block path: the same numbers as scoring each resample's rows."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import mean_absolute_error, roc_auc_score, root_mean_squared_error

from mlflow_agentic.scoring.paired import _WEIGHTED, Outputs, paired_bootstrap


def resamples(n: int, count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n, n) for _ in range(count)]


def test_weighted_auc_is_roc_auc_of_each_resample_ties_and_one_class_included():
    rng = np.random.default_rng(1)
    y = np.array(["no"] * 40 + ["yes"] * 8, dtype=object)
    p = np.round(rng.random(48) * (1 + (y == "yes")) / 2, 1)  # coarse: many ties
    outputs = Outputs(None, np.column_stack([1 - p, p]), ("no", "yes"))
    rows = resamples(len(y), 200)
    fast = _WEIGHTED["roc_auc"](y, outputs, rows)
    for value, r in zip(fast, rows, strict=True):
        if len(set(y[r])) < 2:
            assert np.isnan(value)
        else:
            assert value == pytest.approx(roc_auc_score(y[r] == "yes", p[r]), abs=1e-12)


@pytest.mark.parametrize("metric, fn", [("rmse", root_mean_squared_error),
                                        ("mae", mean_absolute_error)])
def test_weighted_errors_are_the_errors_of_each_resample(metric, fn):
    rng = np.random.default_rng(2)
    y, pred = rng.normal(size=300), rng.normal(size=300)
    rows = resamples(300, 150)
    fast = _WEIGHTED[metric](y, Outputs(pred, None), rows)
    assert fast == pytest.approx([fn(y[r], pred[r]) for r in rows], rel=1e-10)


def test_a_clearly_better_model_is_beyond_the_noise_and_an_equal_one_is_not():
    rng = np.random.default_rng(3)
    y = np.array([0, 1] * 500)
    good = np.clip(y * 0.6 + rng.random(1000) * 0.5, 0, 1)
    poor = rng.random(1000)

    def as_outputs(p):
        return Outputs(None, np.column_stack([1 - p, p]), (0, 1))

    assert paired_bootstrap("roc_auc", y, as_outputs(good), as_outputs(poor)).beyond()
    same = paired_bootstrap("roc_auc", y, as_outputs(good), as_outputs(good))
    assert not same.beyond() and same.improvement == 0.0


def test_the_ensembles_one_vs_rest_auc_is_scikit_learns():
    from mlflow_agentic.core.metrics import METRICS
    from mlflow_agentic.engine.after.ensemble import utility_of

    rng = np.random.default_rng(4)
    classes = ("a", "b", "c", "d")
    y = np.array(classes, dtype=object)[rng.integers(0, 4, 300)]
    raw = rng.integers(1, 4, (300, 4)).astype(float)  # few distinct values: ties
    proba = raw / raw.sum(axis=1, keepdims=True)
    fast = utility_of(METRICS["roc_auc_ovr"], y, classes)(proba)
    assert fast == pytest.approx(roc_auc_score(y, proba, multi_class="ovr", labels=list(classes)),
                                 abs=1e-12)
