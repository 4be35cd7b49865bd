"""OptunaProposer: deterministic for a seed, started by the portfolio, told FAIL, shared."""

from __future__ import annotations

import optuna
import pytest

from mlflow_agentic import OptunaProposer
from mlflow_agentic.engine import AgenticAutoML
from mlflow_agentic.trainers import get_trainer
from mlflow_agentic.trainers.portfolio import starts

pytestmark = pytest.mark.search  # its tests run searches in-process

TRAINERS = ["linear", "hist_gradient_boosting", "xgboost"]


def sequence(run):
    return [(a.candidate.trainer, dict(a.candidate.params)) for a in run.attempts]


def search(dataset, seed, **kw):
    proposer = OptunaProposer(seed=seed, **kw)
    run = AgenticAutoML(proposer, max_iterations=4, patience=10, cv=3, trainers=TRAINERS,
                        seed=seed, prune=False, ensemble=False).solve(dataset)
    return run, proposer


@pytest.mark.slow  # over ~3 s
def test_same_seed_same_candidates_and_started_by_the_portfolio(churn_small):
    first, proposer = search(churn_small, seed=7, portfolio="builtin")
    second, _ = search(churn_small, seed=7, portfolio="builtin")
    assert sequence(first) == sequence(second)
    planned = starts("builtin", churn_small, TRAINERS)
    assert len(first.attempts) == len(planned) + 4
    assert sequence(first)[:len(planned)] == [(name, params) for name, params, _ in planned]
    assert "portfolio configuration 1 of" in first.attempts[0].candidate.rationale
    # every trial was told: the study holds one COMPLETE trial per attempt
    states = [t.state for t in proposer.study.trials]
    assert states == [optuna.trial.TrialState.COMPLETE] * len(first.attempts)
    assert [t.value for t in proposer.study.trials] == pytest.approx(
        [a.score for a in first.attempts])
    other, _ = search(churn_small, seed=8, portfolio="builtin")
    assert sequence(other)[len(planned):] != sequence(first)[len(planned):]


def test_the_defaults_start_is_every_trainer_at_its_defaults_cheap_first(churn_small):
    run, _ = search(churn_small, seed=7, portfolio="defaults")
    for attempt, name in zip(run.attempts, TRAINERS, strict=False):
        assert attempt.candidate.trainer == name
        assert attempt.candidate.params == get_trainer(name).defaults(churn_small)


@pytest.mark.slow  # over ~3 s
def test_failures_are_told_as_fail(churn_small, broken_trainer):
    proposer = OptunaProposer(seed=0, portfolio="defaults")
    run = AgenticAutoML(proposer, max_iterations=0, cv=3, trainers=["linear", broken_trainer],
                        ensemble=False).solve(churn_small)
    assert [a.failed for a in run.attempts] == [False, True]
    assert [t.state.name for t in proposer.study.trials] == ["COMPLETE", "FAIL"]


@pytest.mark.slow
def test_shared_storage_lets_processes_share_one_study(churn_small, tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    search(churn_small, seed=1, storage=storage, study_name="shared")
    search(churn_small, seed=2, storage=storage, study_name="shared")
    study = optuna.load_study(study_name="shared", storage=storage)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    # the second worker skipped the already-enqueued defaults and added its own trials
    assert len(complete) >= len(TRAINERS) + 4 + 4
    assert len(study.trials) == len(complete)



@pytest.mark.slow  # over ~3 s
def test_random_proposer_draws_uniformly_from_the_spaces_and_is_seeded(churn_small):
    from mlflow_agentic.proposers import RandomProposer

    def draws(seed):
        proposer = RandomProposer(seed=seed)
        run = AgenticAutoML(proposer, max_iterations=None, patience=None, max_attempts=8, cv=3,
                            trainers=TRAINERS, seed=seed, ensemble=False
                            ).solve(churn_small)
        return run, proposer

    first, proposer = draws(3)
    assert sequence(first) == sequence(draws(3)[0])
    assert sequence(first) != sequence(draws(4)[0])
    assert len(first.attempts) == 8 and first.attempts[0].phase == "seed"
    for attempt in first.attempts:
        cand = attempt.candidate
        space = get_trainer(cand.trainer).space(churn_small)
        assert set(cand.params) == set(space)
        assert cand.params != get_trainer(cand.trainer).defaults(churn_small)  # no defaults
        assert cand.rationale.startswith("uniform random draw")
    assert isinstance(proposer.study.sampler, optuna.samplers.RandomSampler)
    assert len(proposer.study.trials) == 8  # every draw was told back (ask/tell)
