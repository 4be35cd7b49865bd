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
