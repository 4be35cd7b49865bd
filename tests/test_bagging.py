"""An attempt whose refit would not fit the time left is served as the average of its fold
models (already fitted: no refit), not swapped for a worse attempt. The bag must predict exactly
what the sealed holdout was scored with, be logged and served like any model, and the disk must
keep the fold models of the best attempts only."""

from __future__ import annotations

from pathlib import Path

import mlflow
import numpy as np
import pytest

from mlflow_agentic import SequenceProposer, SolutionCandidate
from mlflow_agentic.engine import AgenticAutoML
from mlflow_agentic.engine.after.refit import bagged
from mlflow_agentic.engine.after.selection import BAG_KEEP
from mlflow_agentic.engine.search.budget import LoopBudget
from mlflow_agentic.trainers.transforms import WeightedEnsemble

pytestmark = pytest.mark.search  # its tests run searches in-process

HGB = SolutionCandidate("hist_gradient_boosting", {"max_iter": 40})


def linear(c: float) -> SolutionCandidate:
    return SolutionCandidate("linear", {"C": c})


@pytest.fixture(scope="module")
def searched(churn_small):
    extra = churn_small.X.iloc[:60]
    automl = AgenticAutoML(SequenceProposer([HGB, linear(1.0)]), cv=3, n_jobs=2,
                           trainers=["hist_gradient_boosting", "linear"], extra_X=extra)
    return automl, automl.solve(churn_small), extra


def test_the_bag_predicts_what_the_holdout_was_scored_with(searched, churn_small):
    automl, run, extra = searched
    best = run.best_attempt
    bag = bagged(best, run.attempts, automl.runner.folds, churn_small)
    assert isinstance(bag, WeightedEnsemble) and len(bag.estimators) == 3  # one per fold
    # the attempt's extra-row output is the fold models' mean: the bag serves that same mean
    np.testing.assert_allclose(bag.predict_proba(extra), automl.extras[best.index], atol=1e-9)
    assert set(bag.predict(extra)) <= set(churn_small.classes)


def test_only_the_best_attempts_keep_their_fold_models(churn_small):
    candidates = [linear(c) for c in np.logspace(-3, 2, BAG_KEEP + 3)]
    automl = AgenticAutoML(SequenceProposer(candidates), cv=3, n_jobs=2, trainers=["linear"],
                           max_iterations=len(candidates), patience=len(candidates))
    run = automl.solve(churn_small)
    folds = automl.runner.folds
    kept = {int(p.stem.split("-")[0]) for p in (Path(folds.spill_to) / "models").glob("*.pkl")}
    ranked = sorted((a for a in run.attempts if a.selectable), key=lambda a: -a.utility)
    assert kept == {a.index for a in ranked[:BAG_KEEP]}
    worst = ranked[-1]
    assert bagged(worst, run.attempts, folds, churn_small) is None  # forgotten: refit instead
    # two kept attempts of one style share each fold's preprocessing: pickled once, not twice
    first, second = (folds.fold_pipelines(a.index, "scaled") for a in ranked[:2])
    for k in range(folds.n_splits):
        assert first[k][:-1].steps[0][1] is second[k][:-1].steps[0][1]
        assert first[k][-1] is not second[k][-1]


@pytest.mark.slow
def test_a_late_refit_serves_the_bag_and_it_is_logged_and_served(churn_small, tracking_uri,
                                                                monkeypatch):
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    monkeypatch.setattr(LoopBudget, "refit_fits",  # a refit is always late, a bag is not
                        lambda self, records, bag=False: bag)
    tracker = MlflowTracker(register="never")
    result = run_search(churn_small, lambda: SequenceProposer([HGB, linear(1.0)]), cv=3,
                        n_jobs=2, max_iterations=1, ensemble=False,
                        trainers=["hist_gradient_boosting", "linear"], tracker=tracker)
    run = result.run
    assert run.best_attempt is run.top_attempt  # the best is kept, not swapped
    assert isinstance(run.model, WeightedEnsemble) and run.refit_seconds == 0.0
    assert "served as the average of its fold models" in run.selection_note
    assert run.selection_note in run.summary()  # said where the result is printed
    parent = mlflow.MlflowClient(tracking_uri=tracking_uri).get_run(tracker.parent_run_id)
    assert "average of its fold models" in parent.data.tags["selection_note"]
    served = mlflow.pyfunc.load_model(tracker.model_uri)
    rows = churn_small.X.iloc[:20]
    assert list(served.predict(rows)) == list(run.model.predict(rows))


def test_bag_setting_serves_the_fold_average_when_a_refit_would_fit(churn_small):
    automl = AgenticAutoML(SequenceProposer([HGB, linear(1.0)]), cv=3, n_jobs=2, bag=True,
                           trainers=["hist_gradient_boosting", "linear"], ensemble=False)
    run = automl.solve(churn_small)  # no time budget: a refit always fits
    assert run.bagged and run.refit_seconds == 0.0
    assert isinstance(run.model, WeightedEnsemble) and len(run.model.estimators) == 3
    assert "served as the average of its fold models (bag)" in run.selection_note
    fold_mean = bagged(run.best_attempt, run.attempts, automl.runner.folds, churn_small)
    rows = churn_small.X.iloc[:30]
    np.testing.assert_allclose(run.model.predict_proba(rows), fold_mean.predict_proba(rows))
