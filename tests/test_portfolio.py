"""The portfolio of proven configurations: shipped for both task families, clipped into each
dataset's space, a bad file refused with what a good one looks like, the command line's choice
recorded on the search run."""

from __future__ import annotations

import json

import pytest

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.data import Dataset
from mlflow_agentic.trainers import get_trainer
from mlflow_agentic.trainers.portfolio import SHIPPED, clipped, starts
from mlflow_agentic.trainers.space import CategoricalParam, FloatParam, IntParam


def test_the_shipped_portfolio_is_classifications_with_known_trainers(churn_small):
    shipped = json.loads(SHIPPED.read_text())
    assert set(shipped) == {"classification"}  # regression's lost on the suite: not shipped
    assert 2 <= len(shipped["classification"]) <= 8
    for entry in shipped["classification"]:
        space = get_trainer(entry["trainer"]).space(churn_small)  # a known trainer
        assert set(entry["params"]) <= set(space), entry


def test_a_regression_starts_with_every_trainer_at_its_defaults(churn_frame):
    regression = Dataset.from_frame(churn_frame.head(300), "MonthlyCharges")
    trainers = ["linear", "xgboost", "random_forest"]
    assert starts("builtin", regression, trainers) == starts("defaults", regression, trainers)


@pytest.mark.parametrize("budget, large_rows, seeded", [
    (30, 100, ["linear", "xgboost"]),  # a large table against the clock: no slow seed
    (None, 100, ["linear", "xgboost", "random_forest"]),  # no clock: every trainer seeded
    (30, 0, ["linear", "xgboost", "random_forest"]),  # --large-rows 0: off
    (30, 10_000, ["linear", "xgboost", "random_forest"])])  # a small table
def test_a_large_table_against_the_clock_is_not_seeded_with_slow_trainers(
        churn_frame, budget, large_rows, seeded):
    """The forests stay in the sampler's space; only their first, costly fits are not queued."""
    from mlflow_agentic.core.observer import SearchContext
    from mlflow_agentic.core.settings import SearchSettings
    from mlflow_agentic.proposers.optuna import OptunaProposer

    regression = Dataset.from_frame(churn_frame.head(300), "MonthlyCharges")
    trainers = ["linear", "xgboost", "random_forest"]
    settings = SearchSettings(time_budget=budget, large_rows=large_rows, max_attempts=9)
    proposer = OptunaProposer(seed=0)
    proposer.start(SearchContext(dataset=regression, metric="rmse", trainers=tuple(trainers),
                                 baseline_score=0.0, baseline_fold_scores=(), n_splits=3,
                                 search=settings, proposer_name="optuna"))
    seeds = proposer.propose_initial(regression, trainers)
    assert [c.trainer for c in seeds] == seeded
    asked = proposer.study.trials[0].distributions["trainer"]
    assert "random_forest" in asked.choices  # the sampler may still choose it


def test_every_start_lies_inside_this_datasets_space(churn_small):
    trainers = ["linear", "hist_gradient_boosting", "xgboost", "random_forest", "extra_trees"]
    planned = starts("builtin", churn_small, trainers)
    assert {name for name, _, _ in planned} == set(trainers)  # the unnamed: at defaults
    for name, params, why in planned:
        space = get_trainer(name).space(churn_small)
        assert set(params) == set(space), name
        assert all(space[k].contains(v) for k, v in params.items()), (name, params)
        assert why.startswith(("portfolio configuration", "trainer defaults"))


def test_a_tiny_dataset_gets_its_entries_clipped_not_refused(churn_frame, tmp_path):
    tiny = Dataset.from_frame(churn_frame.head(120), "Churn")
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"classification": [
        {"trainer": "hist_gradient_boosting",
         "params": {"max_leaf_nodes": 10_000, "min_samples_leaf": 1, "learning_rate": 9.0}}]}))
    (name, params, why), *_ = starts(str(path), tiny, ["hist_gradient_boosting"])
    space = get_trainer(name).space(tiny)
    assert params["max_leaf_nodes"] == space["max_leaf_nodes"].high
    assert params["min_samples_leaf"] == space["min_samples_leaf"].low
    assert params["learning_rate"] == space["learning_rate"].high
    assert why == "portfolio configuration 1 of 1"


def test_clipping_drops_what_the_space_does_not_offer():
    space = {"a": IntParam(1, 10), "b": FloatParam(0.0, 1.0), "c": CategoricalParam(("x", None))}
    assert clipped(space, {"a": 99.6, "b": -3, "c": "y", "d": 1}) == {"a": 10, "b": 0.0}
    assert clipped(space, {"a": 2.4, "c": None}) == {"a": 2, "c": None}


@pytest.mark.parametrize("content, says", [
    (None, "not a file"),
    ("{not json", "not valid JSON"),
    ('{"classification": [{"params": {}}]}', "must be a list of objects"),
])
def test_a_bad_portfolio_file_names_the_file_and_the_valid_form(churn_small, tmp_path, content,
                                                                says):
    path = tmp_path / "portfolio.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UserInputError, match=says) as caught:
        starts(str(path), churn_small, ["linear"])
    assert "portfolio.json" in str(caught.value) and "trainer" in str(caught.value) or \
        "JSON" in str(caught.value)


@pytest.mark.search
@pytest.mark.slow  # over ~3 s
def test_the_run_records_which_portfolio_started_it(churn_small, tracking_uri):
    import mlflow

    from mlflow_agentic import search

    result = search(churn_small, max_attempts=3, cv=3, ensemble=False,
                    trainers=["linear", "xgboost"], portfolio="defaults", register="never")
    run = mlflow.MlflowClient(tracking_uri).get_run(result.run_id)
    assert run.data.params["portfolio"] == "defaults"
    assert [a.candidate.params for a in result.run.attempts[:2]] == [
        get_trainer("linear").defaults(churn_small), get_trainer("xgboost").defaults(churn_small)]


def test_a_bad_portfolio_file_is_refused_before_anything_is_logged(churn_small, tracking_uri,
                                                                    tmp_path):
    import mlflow

    from mlflow_agentic import search

    with pytest.raises(UserInputError, match="not a file"):
        search(churn_small, max_attempts=3, portfolio=str(tmp_path / "nosuch.json"))
    client = mlflow.MlflowClient(tracking_uri)
    assert [r for e in client.search_experiments() for r in client.search_runs(
        [e.experiment_id])] == []
