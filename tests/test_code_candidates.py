"""A code-mode candidate cross-validated in the real sandbox on the engine's own folds, one
container per fold: the engine's fold scores are exactly what the same pipeline scores fitted
in-process, and no fold's container holds the labels of the rows it predicts."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from mlflow_agentic.core.metrics import resolve_metric
from mlflow_agentic.data import Dataset
from mlflow_agentic.engine.evaluate.code import evaluate_code
from mlflow_agentic.engine.evaluate.cv import make_splits

pytestmark = pytest.mark.slow  # the Docker sandbox

CHARGES_PER_MONTH = '''
import numpy as np
import pandas as pd
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler


def charges_per_month(X):
    X = X.copy()
    total = pd.to_numeric(X["TotalCharges"], errors="coerce")
    X["charges_per_month"] = (total / X["tenure"].clip(lower=1)).fillna(0.0)
    X["TotalCharges"] = total.fillna(0.0)
    return X


def build_pipeline(columns):
    prep = make_column_transformer(
        (StandardScaler(), make_column_selector(dtype_include="number")),
        (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_exclude="number")))
    return make_pipeline(FunctionTransformer(charges_per_month), prep,
                         LogisticRegression(max_iter=2000))
'''


@pytest.fixture(scope="module")
def churn(churn_frame):
    return Dataset.from_frame(churn_frame, "Churn", name="churn")


def test_the_engine_scores_a_code_candidate_fold_by_fold(docker_sandbox, churn):
    splits = make_splits(churn, 3, random_state=0)
    metric = resolve_metric(None, churn.task)
    outcome, result = evaluate_code(docker_sandbox, churn, splits, metric, CHARGES_PER_MONTH)
    assert outcome.complete, outcome.error
    assert "charges_per_month" in " ".join(result.features)  # the feature the code added
    namespace: dict = {}
    exec(CHARGES_PER_MONTH, namespace)  # noqa: S102 - the test's own code, in-process
    X, y = churn.frame[churn.feature_columns], churn.y.to_numpy()
    expected = []
    for train, test in splits:
        model = clone(namespace["build_pipeline"]({})).fit(X.iloc[train], y[train])
        expected.append(metric.score(y[test], None, model.predict_proba(X.iloc[test]),
                                     tuple(churn.classes)))
    assert outcome.fold_scores == pytest.approx(expected, abs=1e-9)
    assert 0.75 < np.mean(outcome.fold_scores) < 0.95
    assert outcome.oof.shape == (churn.n_rows, 2)


def test_a_failing_candidate_is_an_outcome_with_its_stage(docker_sandbox, churn):
    splits = make_splits(churn, 3, random_state=0)
    code = CHARGES_PER_MONTH.replace('X["tenure"]', 'X["no_such_column"]')
    outcome, result = evaluate_code(docker_sandbox, churn, splits,
                                    resolve_metric(None, churn.task), code)
    assert not outcome.complete and outcome.error.startswith("fold 0: fit: KeyError")
    assert "no_such_column" in outcome.traceback and result.label == "docker"


SPY = CHARGES_PER_MONTH.replace("def build_pipeline(columns):\n", """def build_pipeline(columns):
    train = pd.read_parquet("/sandbox/train.parquet")
    rows = pd.read_parquet("/sandbox/rows.parquet")
    print(f"train {len(train)} labelled {'__target__' in train.columns} "
          f"rows {len(rows)} labelled {'__target__' in rows.columns}")
""")


def test_each_fold_runs_alone_without_the_labels_it_is_scored_on(docker_sandbox, churn):
    splits = make_splits(churn, 3, random_state=0)
    outcome, result = evaluate_code(docker_sandbox, churn, splits,
                                    resolve_metric(None, churn.task), SPY, parallel=2)
    assert outcome.complete, outcome.error
    for k, (train, test) in enumerate(splits):  # each fold's own container said what it held
        assert (f"--- fold {k} ---\ntrain {len(train)} labelled True rows {len(test)} "
                "labelled False") in result.log
