"""Ties within one standard error, and the one-standard-error rule, on scripted trainers whose
CV scores are set by a parameter (cheap: cost 1, dear: cost 3)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mlflow_agentic import Dataset, SequenceProposer, SolutionCandidate
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.engine import AgenticAutoML
from mlflow_agentic.trainers import register_trainer, trainer_registry
from tests.conftest import scripted_frame
from tests.scripted import SCRIPTED


@pytest.fixture(scope="module")
def priced():
    register_trainer(dataclasses.replace(SCRIPTED, name="cheap", cost=1))
    register_trainer(dataclasses.replace(SCRIPTED, name="dear", cost=3))
    yield
    trainer_registry(refresh=True)


def solve(rule: str):
    candidates = [SolutionCandidate("dear", {"quality": 0.9}),
                  SolutionCandidate("cheap", {"quality": 0.85}),
                  SolutionCandidate("cheap", {"quality": 0.2})]
    ds = Dataset.from_frame(scripted_frame(n=300, seed=3), name="priced")
    return AgenticAutoML(SequenceProposer(candidates), cv=4, max_iterations=2, patience=5,
                         trainers=["cheap", "dear"], ensemble=False, prune=False, n_jobs=1,
                         selection=rule).solve(ds)


@pytest.mark.search
def test_best_selects_the_top_and_names_its_ties(priced):
    run = solve("best")
    top = max(run.valid_attempts, key=lambda a: a.score)
    assert run.best_attempt is top is run.top_attempt and top.candidate.trainer == "dear"
    se = np.std(top.fold_scores, ddof=1) / math.sqrt(len(top.fold_scores))
    assert run.tie_window == pytest.approx(se)
    assert [a.index for a in run.ties] == [a.index for a in run.valid_attempts
                                           if a is not top and top.score - a.score <= se]
    assert [a.index for a in run.ties] == [2]  # quality 0.85 is within one SE; 0.2 is not
    assert "tied within one standard error" in run.summary() and "02-cheap" in run.summary()


@pytest.mark.search
def test_one_se_selects_the_cheapest_within_one_standard_error(priced):
    run = solve("one-se")
    assert run.top_attempt.candidate.trainer == "dear"
    assert run.best_attempt.index == 2 and run.best_attempt.candidate.trainer == "cheap"
    assert run.model is not None and run.best_score == run.best_attempt.score
    assert "one-standard-error rule" in run.summary() and "01-dear" in run.summary()
    # the same attempts either way: the rule only chooses among them
    assert [a.score for a in run.attempts] == [a.score for a in solve("best").attempts]


def test_an_unknown_rule_is_refused(priced):
    with pytest.raises(UserInputError, match="one-se"):
        solve("simplest")


def record(index: int, folds, trainer: str = "xgboost", greater: bool = True):
    from mlflow_agentic.core.types import AttemptRecord, Verdict

    score = float(np.mean(folds))
    return AttemptRecord(SolutionCandidate(trainer, {}), score, Verdict(True, "ok", score),
                         index=index, greater_is_better=greater, fold_scores=tuple(folds))


@pytest.mark.parametrize("greater", [True, False])
def test_a_combination_is_weighed_against_what_choosing_the_top_single_is_worth(greater):
    """Three close attempts, each best on other folds: the top CV score (0.81) is partly luck.
    Choosing by CV, each fold scored by the attempt best on the other folds, is worth 0.7333;
    an ensemble whose nested score is 0.79 beats that (and says so), one at 0.73 does not."""
    from mlflow_agentic.engine.after.selection import combination_wins, nested_best

    flip = (lambda xs: xs) if greater else (lambda xs: [1 - x for x in xs])  # errors: lower
    history = [record(1, flip([0.80, 0.80, 0.80]), greater=greater),
               record(2, flip([0.90, 0.70, 0.83]), greater=greater),
               record(3, flip([0.70, 0.90, 0.82]), greater=greater)]
    top = max(history, key=lambda a: a.utility)
    assert top.index == 2
    assert nested_best(history) == pytest.approx(flip([(0.70 + 0.70 + 0.80) / 3])[0])
    good = record(4, flip([0.79, 0.79, 0.79]), "ensemble", greater)
    wins, why = combination_wins(good, top, [*history, good])
    assert wins and "best of 3 single attempts" in why and "nested CV" in why
    poor = record(4, flip([0.73, 0.73, 0.73]), "ensemble", greater)
    assert combination_wins(poor, top, [*history, poor]) == (False, "")
    better = record(4, flip([0.82, 0.82, 0.82]), "ensemble", greater)
    assert combination_wins(better, top, [*history, better]) == (True, "")  # above it anyway


def test_one_attempt_or_one_fold_has_no_winners_curse_to_weigh():
    from mlflow_agentic.engine.after.selection import combination_wins, nested_best

    only = record(1, [0.8, 0.7, 0.9])
    assert nested_best([only]) is None and nested_best([record(1, [0.8]), record(2, [0.7])]) \
        is None
    ensemble = record(2, [0.79, 0.79, 0.79], "ensemble")
    assert combination_wins(ensemble, only, [only, ensemble]) == (False, "")


def test_the_ensemble_pool_takes_each_trainers_best_before_more_of_one():
    """After hundreds of trials the top attempts are near copies of one configuration: the
    ensemble's candidates are each trainer's best first, then the rest by CV."""
    from mlflow_agentic.engine.after.selection import diverse_first

    ranked = [record(1, [0.90] * 3), record(2, [0.89] * 3), record(4, [0.88] * 3, "linear"),
              record(3, [0.87] * 3), record(5, [0.70] * 3, "lightgbm")]
    assert [a.index for a in diverse_first(ranked, lambda a: a.candidate.trainer)] == \
        [1, 4, 5, 2, 3]


def test_the_summary_names_a_few_ties_and_counts_the_rest():
    from mlflow_agentic.core.types import TIES_NAMED, EngineeringRun

    attempts = [record(i, [0.90, 0.91, 0.89]) for i in range(1, 131)]
    top = attempts[0]
    run = EngineeringRun(attempts, top.candidate, top.score, None, "roc_auc", 0.5, 129,
                         best_attempt=top, top_attempt=top, ties=tuple(attempts[1:]))
    line = run.summary()
    assert "02-xgboost 0.9000" in line and f"and {129 - TIES_NAMED} more" in line
    assert "130-xgboost" not in line and len(line) < 400
