"""The loop's semantics, pinned with a scripted trainer and scripted proposers."""

from __future__ import annotations

import math
import re

import pytest

from mlflow_agentic import CandidateProposer, Dataset, SequenceProposer, SolutionCandidate
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.engine import AgenticAutoML
from mlflow_agentic.trainers import register_trainer, trainer_registry
from tests.conftest import scripted_frame
from tests.scripted import SCRIPTED, q


@pytest.fixture(scope="module")
def data():
    register_trainer(SCRIPTED)
    yield Dataset.from_frame(scripted_frame(), name="scripted")
    trainer_registry(refresh=True)


def solve(data, candidates, **kw):
    kw.setdefault("trainers", ["scripted"])
    return AgenticAutoML(SequenceProposer(candidates), cv=3, **kw).solve(data)


def qualities(run):
    return [a.candidate.params.get("quality") for a in run.attempts]


@pytest.mark.search
def test_quality_orders_the_scores(data):
    run = solve(data, [q(0.0), q(0.25), q(0.5), q(1.0)], patience=10)
    scores = [a.score for a in run.attempts]
    assert scores == sorted(scores), "precondition: the scripted score rises with quality"
    assert not run.attempts[0].verdict.valid  # chance level is rejected
    assert all(a.verdict.valid for a in run.attempts[1:])


@pytest.mark.search
def test_max_iterations_bounds_reflection_rounds_not_seeds(data):
    run = solve(data, [q(0.1 * i) for i in range(1, 11)], max_iterations=4, patience=10)
    assert len(run.attempts) == 5 and run.n_iterations == 4
    assert [a.phase for a in run.attempts] == ["seed"] + ["reflect"] * 4
    assert "max_iterations=4" in run.stop_reason


@pytest.mark.search
def test_patience_stops_after_rounds_without_improvement(data):
    run = solve(data, [q(1.0), q(0.5), q(0.4), q(0.3), q(0.2)], patience=3)
    assert qualities(run) == [1.0, 0.5, 0.4, 0.3]
    assert "patience" in run.stop_reason


@pytest.mark.search
def test_verified_improvement_resets_patience(data):
    seq = [q(0.25), q(0.2), q(0.15), q(0.6), q(0.3), q(0.3), q(0.3), q(0.9)]
    run = solve(data, seq, patience=3)
    # without the reset at 0.6 the search would stop after 3 reflection rounds
    assert qualities(run) == [0.25, 0.2, 0.15, 0.6, 0.3, 0.3, 0.3]
    assert run.best_candidate.params["quality"] == 0.6


@pytest.mark.search
def test_unverified_attempt_never_resets_patience(data):
    run = solve(data, [q(0.0), q(0.0), q(0.0), q(0.0)], patience=2)
    assert len(run.attempts) == 3  # seed + 2 rounds, none verified
    assert run.best_candidate is None and run.model is None
    assert "nothing verified" in run.summary()


class ManySeeds(CandidateProposer):
    """Seeds four chance-level candidates, then offers good ones."""

    name = "many-seeds"

    def propose_initial(self, dataset, trainers):
        return [q(0.0), q(0.0), q(0.0), q(0.0)]

    def propose_next(self, dataset, history, trainers):
        return q(1.0)


class RawProposer(CandidateProposer):
    """Hands the engine whatever it is given, unchecked, like a buggy third-party proposer."""

    def __init__(self, items):
        self.items = list(items)

    def propose_initial(self, dataset, trainers):
        return [self.items.pop(0)]

    def propose_next(self, dataset, history, trainers):
        return self.items.pop(0) if self.items else None


@pytest.mark.search
def test_seeds_are_all_evaluated_and_patience_starts_after_them(data):
    run = AgenticAutoML(ManySeeds(), patience=1, max_iterations=5, cv=3,
                        trainers=["scripted"]).solve(data)
    assert [a.phase for a in run.attempts] == ["seed"] * 4 + ["reflect"] * 2
    # the first reflection improves (reset), the second repeats the score (patience 1 -> stop)
    assert "patience" in run.stop_reason


@pytest.mark.search
def test_failing_candidate_is_recorded_and_search_goes_on(data):
    run = solve(data, [q(0.5), q(0.9, explode=True), q(0.8)], patience=5)
    failed = run.attempts[1]
    assert failed.failed and "scripted explosion in fit" in failed.error
    assert failed.score == -math.inf and not failed.verdict.valid
    assert "RuntimeError" in failed.traceback
    assert run.attempts[2].verdict.valid and run.best_candidate.params["quality"] == 0.8


@pytest.mark.parametrize("bad, message", [
    (SolutionCandidate("scripted", {"qualty": 0.5}), "unknown parameter 'qualty'"),
    (SolutionCandidate("scripted", {"quality": "high"}), "bad value for scripted.quality"),
    (SolutionCandidate("scripted", ["quality", 0.5]), "must be a mapping"),
    (SolutionCandidate("nonexistent", {}), "trainer 'nonexistent' is not allowed"),
    ("not a candidate", "expected a SolutionCandidate"),
])
@pytest.mark.search
def test_unparseable_proposals_are_failed_attempts(data, bad, message):
    run = AgenticAutoML(RawProposer([q(0.5), bad, q(0.8)]), cv=3, patience=5,
                        trainers=["scripted"]).solve(data)
    assert run.attempts[1].failed and message in run.attempts[1].error
    assert len(run.attempts) == 3 and run.best_candidate.params["quality"] == 0.8


@pytest.mark.search
def test_proposer_running_dry_ends_cleanly(data):
    run = solve(data, [q(0.5), q(0.6)], patience=5, max_iterations=10)
    assert len(run.attempts) == 2 and run.stop_reason == "proposer has no more candidates"


@pytest.mark.search
def test_best_verified_is_refit_on_all_rows(data):
    run = solve(data, [q(0.5), q(1.0), q(0.7)], patience=5)
    assert run.best_candidate.params["quality"] == 1.0
    assert run.model.predict_proba(data.X).shape == (data.n_rows, 2)
    assert re.fullmatch(r"Agentic AutoML: 3 attempts \(3 verified\); best=scripted "
                        r"roc_auc=0\.\d{4} \(baseline 0\.5000\)", run.summary())


@pytest.mark.search
def test_minimised_metric_ranks_lower_as_better(data):
    run = solve(data, [q(0.3), q(1.0), q(0.6)], patience=5, metric="log_loss")
    assert run.best_candidate.params["quality"] == 1.0
    assert run.best_score < run.baseline_score


class AllSeeds(SequenceProposer):
    """Every candidate is a seed (as the LLM and Optuna proposers seed every trainer)."""

    def propose_initial(self, dataset, trainers):
        self._next = len(self.candidates)
        return list(self.candidates)


@pytest.mark.search
def test_attempt_budget_counts_seeds_and_stops_the_search(data):
    run = AgenticAutoML(AllSeeds([q(0.5)] * 5), cv=3, trainers=["scripted"], max_attempts=3,
                        max_iterations=None, patience=None).solve(data)
    assert len(run.attempts) == 3 and run.stop_reason == "attempt budget spent: 3 of 3 attempts"


@pytest.mark.search
def test_without_patience_the_budget_is_spent_even_with_no_improvement(data):
    run = solve(data, [q(1.0)] + [q(0.3)] * 9, max_iterations=None, patience=None,
                max_attempts=8)
    assert len(run.attempts) == 8 and "attempt budget" in run.stop_reason


@pytest.mark.search
def test_time_budget_counts_proposal_time(data):
    import time

    class Slow(SequenceProposer):
        def propose_next(self, dataset, history, trainers):
            time.sleep(0.4)
            return super().propose_next(dataset, history, trainers)

    run = AgenticAutoML(Slow([q(0.5)] * 20), cv=3, trainers=["scripted"], time_budget=1.0,
                        max_iterations=None, patience=None).solve(data)
    assert 2 <= len(run.attempts) <= 4, [a.elapsed for a in run.attempts]
    assert run.stop_reason.startswith("time budget spent")
    elapsed = [a.elapsed for a in run.attempts]
    assert elapsed == sorted(elapsed)
    gaps = [b - a for a, b in zip(elapsed, elapsed[1:], strict=False)]
    assert all(g >= 0.4 for g in gaps)  # the proposal's sleep is inside the elapsed time


@pytest.mark.slow
def test_a_fold_still_fitting_when_the_budget_runs_out_is_stopped(data):
    """Folds fitting on workers are not waited for past the deadline (a fold on a big file
    can take minutes): the attempt is cut, the workers stopped, the search ends in time."""
    from tests.scripted import SLEEPY

    register_trainer(SLEEPY)
    fold = 600.0  # seconds each sleepy fold would take: far past the 20 s budget
    run = AgenticAutoML(SequenceProposer([q(1.0), SolutionCandidate("sleepy", {"seconds": fold})]),
                        cv=3, trainers=["scripted", "sleepy"], time_budget=20.0, n_jobs=2,
                        max_iterations=1, patience=5, ensemble=False).solve(data)
    quick, sleepy = run.attempts
    assert quick.status == "verified"
    assert sleepy.pruned is not None and sleepy.pruned.startswith("time budget spent")
    assert sleepy.elapsed < fold  # it ended without waiting for a fold it had started


def test_an_unbounded_search_is_refused(data):
    with pytest.raises(UserInputError, match="unbounded"):
        AgenticAutoML(SequenceProposer([q(0.5)]), max_iterations=None, patience=None)


@pytest.mark.parametrize(("changes", "message"), [
    ({"patience": 0}, "patience must be >= 1, got 0"),
    ({"max_iterations": -1}, "max_iterations must be >= 0, got -1"),
    ({"time_budget": float("nan")}, "time budget nan: expected a positive number of seconds"),
    ({"cv": 1}, "cv must be at least 2 folds, got 1"),
    ({"n_jobs": 0}, "n_jobs 0: use 1 or more workers"),
    ({"margin": 1.5}, "margin must be in [0, 1), got 1.5"),
])
def test_settings_are_checked_in_one_place_for_every_entry(changes, message, tmp_path):
    """The loop, the orchestrator and search() build one SearchSettings: same check, same
    words, before any data is read."""
    from mlflow_agentic import search
    from mlflow_agentic.core.settings import SearchSettings

    for build in (lambda: SearchSettings.of(**changes),
                  lambda: AgenticAutoML(SequenceProposer([q(0.5)]), **changes),
                  lambda: search(tmp_path / "never-read.csv", **changes)):
        with pytest.raises(UserInputError) as error:
            build()
        assert message in str(error.value)


def test_an_unknown_setting_is_named_with_the_closest():
    with pytest.raises(TypeError, match="unknown search setting 'max_iteration'. .*Did you "
                                        "mean 'max_iterations'"):
        AgenticAutoML(SequenceProposer([q(0.5)]), max_iteration=3)


@pytest.mark.parametrize("offset, folds", [(None, 5), (0, 3), (1, 5)])
@pytest.mark.search
def test_a_large_table_is_searched_on_fewer_folds(data, offset, folds):
    """From ``large_rows`` training rows, 3 folds instead of ``cv`` (0: ``cv`` at every size)."""
    large_rows = 0 if offset is None else data.n_rows + offset
    run = AgenticAutoML(SequenceProposer([q(0.7)]), cv=5, large_rows=large_rows,
                        trainers=["scripted"], max_attempts=1).solve(data)
    assert len(run.attempts[0].fold_scores) == folds


@pytest.mark.parametrize("terminal", [True, False])
@pytest.mark.search
def test_the_progress_line_shows_the_best_so_far_and_the_time_left_on_a_terminal_only(
        data, terminal):
    """Updated in place on a terminal (then erased); nothing of it in a log or a pipe."""
    import io

    from rich.console import Console

    from mlflow_agentic.cli.progress import RichProgress

    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=200)
    AgenticAutoML(SequenceProposer([q(0.6), q(0.9), q(0.7)]), cv=3, trainers=["scripted"],
                  time_budget=60, observers=[RichProgress(console)]).solve(data)
    text = out.getvalue()
    assert ("best roc_auc 0." in text and "s left" in text and "#3: scripted" in text) \
        is terminal
    assert "leaderboard" in text  # the table at the end is printed either way
