"""Each leakage check fires on its planted trap and stays quiet on clean data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlflow_agentic.data import Dataset
from mlflow_agentic.data.split import seal_holdout
from mlflow_agentic.frontdoor.briefing import build_briefing
from mlflow_agentic.verify import leakage


def churnish(n=600, seed=0, **extra):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = rng.random(n) < 1 / (1 + np.exp(-(x - 1)))
    df = pd.DataFrame({"x": x, "noise": rng.normal(size=n), "plan": rng.choice(list("abcd"), n)})
    for name, make in extra.items():
        df[name] = make(rng, y)
    df["target"] = np.where(y, "yes", "no")
    return Dataset.from_frame(df)


def checks(findings, severity=None):
    return {(f.check, f.column) for f in findings if severity in (None, f.severity)}


def test_clean_data_has_no_findings():
    assert build_briefing(churnish()).findings == []


def test_single_feature_separation_is_critical_and_excluded():
    ds = churnish(leak=lambda rng, y: np.where(y ^ (rng.random(len(y)) < 0.01), "r", "n"),
                  strong=lambda rng, y: y + rng.normal(0, 0.45, len(y)))
    brief = build_briefing(ds)
    assert ("single_feature", "leak") in checks(brief.findings, "critical")
    assert ("single_feature", "strong") in checks(brief.findings, "warning")
    assert "leak" in brief.excluded and "leak" not in brief.dataset.feature_columns
    assert "strong" in brief.dataset.feature_columns
    kept = build_briefing(ds, keep_flagged_columns=True)
    assert "leak" in kept.dataset.feature_columns and kept.excluded == {}


def test_missing_values_that_separate_the_classes():
    ds = churnish(closed_at=lambda rng, y: np.where(y, rng.normal(size=len(y)), np.nan))
    assert ("missing_separation", "closed_at") in checks(build_briefing(ds).findings, "critical")


@pytest.mark.parametrize("metric, score, baseline, flagged", [
    ("roc_auc", 0.99, 0.5, True), ("roc_auc", 0.98, 0.5, False),
    ("accuracy", 0.99, 0.6, True), ("accuracy", 0.99, 0.99, False),
    ("r2", 0.995, 0.0, True), ("rmse", 0.05, 1.0, True), ("rmse", 0.5, 1.0, False),
])
def test_too_good_to_be_true(metric, score, baseline, flagged):
    assert (leakage.check_too_good(metric, score, baseline) is not None) == flagged


def test_near_duplicates_and_their_cv_straddling():
    ds = churnish(300)
    dup = Dataset.from_frame(pd.concat([ds.frame] * 2, ignore_index=True))
    clusters = leakage.near_duplicate_clusters(dup)
    assert leakage.duplicate_share(clusters) == 1.0
    from sklearn.model_selection import KFold

    splits = list(KFold(5, shuffle=True, random_state=0).split(dup.X))
    found = leakage.check_near_duplicates(dup, splits=splits)
    assert {f.severity for f in found} == {"warning", "critical"}
    assert leakage.check_near_duplicates(ds) == []


def test_imbalance_and_id_columns():
    rng = np.random.default_rng(0)
    n = 1000
    df = pd.DataFrame({"row": np.arange(n), "x": rng.normal(size=n),
                       "target": np.where(rng.random(n) < 0.03, "yes", "no")})
    found = build_briefing(Dataset.from_frame(df)).findings
    assert {"class_imbalance", "id_column"} <= {f.check for f in found}


def test_group_and_time_hazards_are_reported_and_avoided():
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"x": rng.normal(size=n), "shop": [f"s{i % 12}" for i in range(n)],
                       "day": pd.date_range("2022-01-01", periods=n).strftime("%Y-%m-%d"),
                       "target": rng.choice(["a", "b"], n)})
    ds = Dataset.from_frame(df)
    train, _ = seal_holdout(ds, group_column="shop")
    brief = build_briefing(train)
    assert brief.cv_scheme == "group" and brief.dataset.columns["shop"].kind == "excluded"
    group = [f for f in brief.findings if f.check == "group_leakage"]
    assert group and group[0].severity == "warning" and group[0].value > 0.9
    forced = build_briefing(train, cv_scheme="stratified")
    assert any(f.check == "group_leakage" and f.severity == "critical" for f in forced.findings)
    train, _ = seal_holdout(ds, time_column="day")
    brief = build_briefing(train)
    assert brief.cv_scheme == "time"
    assert [f.severity for f in brief.findings if f.check == "time_leakage"] == ["warning"]
    forced = build_briefing(train, cv_scheme="stratified")
    assert [f.severity for f in forced.findings if f.check == "time_leakage"] == ["critical"]


def test_the_checks_module_has_no_io_and_no_language_model():
    import ast
    from pathlib import Path

    source = Path(leakage.__file__).read_text()
    names = {n.names[0].name.split(".")[0] if isinstance(n, ast.Import) else
             (n.module or "").split(".")[0] for n in ast.walk(ast.parse(source))
             if isinstance(n, (ast.Import, ast.ImportFrom))}
    assert names <= {"__future__", "collections", "dataclasses", "typing", "numpy", "pandas",
                     "mlflow_agentic"}
    assert "open(" not in source and "openai" not in source


def test_the_loop_takes_the_briefings_folds_and_only_those():
    from mlflow_agentic.engine.evaluate.cv import make_splits

    def sealed(seed):
        ds = churnish(300, seed=seed)
        dup = Dataset.from_frame(pd.concat([ds.frame] * 2, ignore_index=True))
        return seal_holdout(dup, random_state=0)[0]

    brief = build_briefing(sealed(0), cv=3, random_state=7)
    assert brief.cv_scheme == "group" and brief.folds is not None
    train = brief.dataset
    taken = make_splits(train, 3, 7, "group", known=brief.folds)
    assert taken is brief.folds.splits
    for (a, b), (c, d) in zip(taken, make_splits(train, 3, 7, "group"), strict=True):
        assert np.array_equal(a, c) and np.array_equal(b, d)
    # another seed, fold count or scheme, or other rows: built anew
    for other in [(train, 3, 8, "group"), (train, 4, 7, "group"), (train, 3, 7, "stratified"),
                  (build_briefing(sealed(1), cv=3, random_state=7).dataset, 3, 7, "group")]:
        assert make_splits(*other, known=brief.folds) is not brief.folds.splits
