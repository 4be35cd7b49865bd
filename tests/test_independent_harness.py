"""The independent benchmark's harness: a system that ran and gave no predictions is scored as
a constant predictor, so its task stays in every system's mean rank."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import independent  # noqa: E402 - the harness, as it runs


def split(folder: Path, train: pd.DataFrame, labels: pd.Series) -> Path:
    folder.mkdir()
    train.to_csv(folder / "train.csv", index=False)
    labels.to_frame().to_csv(folder / "test_labels.csv", index=False)
    return folder


@pytest.mark.parametrize("metric", ["roc_auc", "roc_auc_ovr"])
def test_a_failed_classifier_scores_as_the_class_shares(tmp_path, metric):
    rng = np.random.default_rng(0)
    classes = ["a", "b"] if metric == "roc_auc" else ["a", "b", "c"]
    train = pd.DataFrame({"x": rng.normal(size=60), "y": rng.choice(classes, 60)})
    folder = split(tmp_path / "split", train, pd.Series(rng.choice(classes, 20), name="y"))
    row = independent.failed(RuntimeError("autogluon failed:\nMemoryError"), folder, "y",
                             metric, tmp_path, 12.5)
    assert row["failed"] == "MemoryError" and row["wall"] == 12.5 and row["trials"] == 0
    assert independent.score(folder, "y", metric, row["predictions"]) == pytest.approx(0.5)


def test_a_failed_regressor_scores_as_the_training_mean(tmp_path):
    train = pd.DataFrame({"x": range(4), "y": [1.0, 2.0, 3.0, 6.0]})
    folder = split(tmp_path / "split", train, pd.Series([0.0, 6.0], name="y"))
    row = independent.failed(RuntimeError("no model"), folder, "y", "rmse", tmp_path, 3.0)
    assert independent.score(folder, "y", "rmse", row["predictions"]) == pytest.approx(3.0)
