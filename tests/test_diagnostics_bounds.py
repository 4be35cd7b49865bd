"""Holdout diagnostics stay bounded whatever the table: permutation importance on a wide table
(its shuffled copies grow with the columns squared: 10,000 columns x 50 rows once ran 845 s to
4.6 GB) is skipped with its reason, with or without a time budget."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_agentic.data import Dataset
from mlflow_agentic.data.split import seal_holdout
from mlflow_agentic.tracking.results.diagnostics import IMPORTANCE_MAX_CELLS, log_diagnostics
from mlflow_agentic.trainers import get_trainer

pytestmark = pytest.mark.slow  # a search-sized table through the evaluator (about 7 s)


class Direct:
    """What ``log_diagnostics`` asks of the recorder: run a step now."""

    @staticmethod
    def call(_what, step, *args):
        return step(*args)


def test_a_wide_tables_importance_is_skipped_with_its_reason(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 2000)), columns=[f"c{i}" for i in range(2000)])
    frame["y"] = np.where(frame["c0"] > 0, "yes", "no")
    train, holdout = seal_holdout(Dataset.from_frame(frame, "y", name="wide"))
    model = get_trainer("linear").pipeline(train, {}).fit(train.X, train.y)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        experiment = mlflow.create_experiment("wide")
        with mlflow.start_run(experiment_id=experiment):
            tags = log_diagnostics(Direct(), model, train, holdout, "roc_auc")
    finally:
        mlflow.set_tracking_uri(None)
    assert tags["diagnostics.importance"].startswith("skipped: ")
    assert f"more than {IMPORTANCE_MAX_CELLS:,}" in tags["diagnostics.importance"]
    assert "2,000 columns" in tags["diagnostics.importance"]
