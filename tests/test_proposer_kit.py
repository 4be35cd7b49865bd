"""``mlflow_agentic.testing.check_proposer``: every built-in proposer keeps the loop's contract,
and each check catches the proposer that breaks it."""

from __future__ import annotations

import hashlib
import itertools
import random
import re

import pytest

from mlflow_agentic.core.types import SolutionCandidate
from mlflow_agentic.proposers import (
    CandidateProposer,
    OptunaProposer,
    RandomProposer,
    SequenceProposer,
)
from mlflow_agentic.testing import KIT_TRAINERS, ProposerCheckFailed, check_proposer
from tests.fakes.code_team import BROKEN, PLAIN, CodeTeam
from tests.fakes.openai_server import ScriptedOpenAI

ALL = ["declares_itself", "proposes_within_its_trainers", "is_seeded",
       "stops_within_its_budget", "failures_are_data", "resumes"]


@pytest.mark.parametrize("make", [
    pytest.param(lambda: OptunaProposer(seed=0), marks=pytest.mark.slow),
    pytest.param(lambda: OptunaProposer(seed=0, portfolio="defaults"), marks=pytest.mark.slow),
    pytest.param(lambda: RandomProposer(seed=0), marks=pytest.mark.slow),
    lambda trainers: SequenceProposer.defaults(trainers),  # the fast tier's quick form
], ids=["optuna", "optuna-defaults", "random", "sequence"])
@pytest.mark.search
def test_a_built_in_proposer_passes_every_check(make):
    assert check_proposer(make) == ALL


def answer_from_the_prompt(body: dict):
    """A deterministic LLM: the same conversation gets the same proposal (one of the trainers
    its schema allows, chosen by a digest of the prompt)."""
    schema = body["response_format"]["json_schema"]["schema"]
    trainers = schema["properties"]["trainer"]["enum"]
    digest = hashlib.sha256(body["messages"][-1]["content"].encode()).digest()
    return ("answer", {"trainer": trainers[digest[0] % len(trainers)], "params": {},
                       "rationale": "chosen by the prompt's digest", "expected_score": 0.9})


@pytest.mark.search
@pytest.mark.slow  # over ~3 s
def test_the_llm_proposer_passes_every_check_over_http():
    from mlflow_agentic.proposers.llm import LLMProposer

    server = ScriptedOpenAI(responder=answer_from_the_prompt)
    try:
        make = lambda: LLMProposer(model="scripted", base_url=server.base_url,  # noqa: E731
                                   api_key="k", seed=0, timeout=5, backoff=0.01)
        assert check_proposer(make) == ALL
        assert len(server.requests) > 20  # every proposal was asked over HTTP
    finally:
        server.close()


@pytest.mark.slow
def test_the_code_proposer_passes_every_check_in_the_docker_sandbox(docker_sandbox):
    from mlflow_agentic.proposers.code import CodeProposer

    team = CodeTeam(["plain logistic", "forgetful coder"],
                    {"plain logistic": PLAIN, "forgetful coder": BROKEN})
    server = ScriptedOpenAI(responder=team)
    try:
        make = lambda: CodeProposer("scripted", server.base_url, seed=0,  # noqa: E731
                                    max_experiments=2)
        assert check_proposer(make, sandbox=docker_sandbox, max_iterations=2) == ALL
        assert {"planner", "coder", "critic", "submitter"} <= set(team.roles)
    finally:
        server.close()


class ZeroBatch(SequenceProposer):
    batch_size = 0


class Anywhere(CandidateProposer):
    """Ignores the trainers it is offered."""

    def propose_initial(self, dataset, trainers):
        return [SolutionCandidate("random_forest", {"n_estimators": 20})]

    def propose_next(self, dataset, history, trainers):
        return SolutionCandidate("linear", {}) if len(history) < 3 else None


class Unseeded(CandidateProposer):
    """Draws from the global random state: another search, other candidates."""

    def propose_initial(self, dataset, trainers):
        return [self.propose_next(dataset, [], trainers)]

    def propose_next(self, dataset, history, trainers):
        return SolutionCandidate("linear", {"C": round(random.uniform(0.01, 10), 6)})


class OnlyTheFirst(CandidateProposer):
    """Proposes the first trainer only: a failing trainer offered second is never tried."""

    def propose_initial(self, dataset, trainers):
        return [SolutionCandidate(trainers[-1], {})]

    def propose_next(self, dataset, history, trainers):
        return SolutionCandidate(trainers[-1], {}) if len(history) < 3 else None


_made = itertools.count()


class Forgetful(CandidateProposer):
    """Each proposer made proposes differently from the one before: no search it ran can be
    resumed by another."""

    def __init__(self) -> None:
        self.offset = next(_made)

    def propose_initial(self, dataset, trainers):
        return [SolutionCandidate("linear", {"C": 1.0})]

    def propose_next(self, dataset, history, trainers):
        if len(history) >= 3:
            return None
        return SolutionCandidate("linear", {"C": 0.5 + self.offset + len(history)})


@pytest.mark.parametrize("make, skip, broken", [
    (lambda trainers: ZeroBatch.defaults(trainers), (), "declares_itself: batch_size 0"),
    (Anywhere, (), "proposes_within_its_trainers: attempt 1 names 'random_forest'"),
    (Unseeded, (), "is_seeded: two proposers from make() searched differently"),
    (OnlyTheFirst, (), "failures_are_data: no attempt failed"),
    (Forgetful, ("is_seeded", "failures_are_data"),
     "resumes: resumed from 1 attempts, it ended with"),
], ids=["batch-size", "trainers", "seed", "failures", "resume"])
@pytest.mark.search
def test_each_check_catches_the_proposer_that_breaks_it(make, skip, broken):
    with pytest.raises(ProposerCheckFailed, match="^" + re.escape(broken)):
        check_proposer(make, skip=skip)


def test_an_unknown_check_to_skip_is_named():
    with pytest.raises(ValueError, match="unknown check"):
        check_proposer(lambda: RandomProposer(seed=0), skip=["seeded"])


def test_the_kit_offers_quick_trainers():
    assert set(KIT_TRAINERS) == {"linear", "hist_gradient_boosting"}
