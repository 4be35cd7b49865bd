"""The loop's deadline plans for the refit that will come: the best attempt's, or, when an
ensemble step follows, its likely members': one after another in this process, or side by
side on restarted workers when that ends sooner (a spent budget kills the workers mid-fold)."""

from __future__ import annotations

import pytest

from mlflow_agentic.core.deadline import Deadline
from mlflow_agentic.core.settings import SearchSettings
from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, Verdict
from mlflow_agentic.engine.search.budget import LoopBudget, makespan
from mlflow_agentic.engine.search.reserves import (
    ALONE_SHARE,
    ENSEMBLE_MEMBERS,
    WORKER_START_SECONDS,
    full_refit_share,
)


def attempt(score: float, trainer: str = "linear") -> AttemptRecord:
    attempt.count = getattr(attempt, "count", 0) + 1  # each attempt its own index, as a search
    return AttemptRecord(SolutionCandidate(trainer, {}), score, Verdict(True, "ok", score),
                         index=attempt.count)


def budget(after_loop: bool, workers: int = 2) -> LoopBudget:
    b = LoopBudget(SearchSettings(time_budget=60), {}, after_loop)
    b.start()
    b.workers = workers
    return b


def test_without_an_ensemble_the_deadline_keeps_back_the_best_attempts_refit():
    b = budget(after_loop=False)
    b.note_refit_cost(attempt(0.80), fit_seconds=50.0, n_folds=5, fold_preprocess_seconds=0.0)
    b.note_refit_cost(attempt(0.70), fit_seconds=500.0, n_folds=5, fold_preprocess_seconds=0.0)
    # the best's, not the slowest's: at the share of a fit alone on the machine
    assert b.refit_estimate == pytest.approx(ALONE_SHARE * 10.0 * 1.3)


def test_with_an_ensemble_the_likely_members_refit_side_by_side_on_restarted_workers():
    b = budget(after_loop=True, workers=2)
    costs = [10.0, 20.0, 30.0, 40.0, 50.0]  # one fold each (n_folds=1), best score last
    for i, seconds in enumerate(costs):
        b.note_refit_cost(attempt(0.7 + i / 100), fit_seconds=seconds, n_folds=1,
                          fold_preprocess_seconds=0.0)
    likely = sorted(costs)[-ENSEMBLE_MEMBERS:]  # the best scores are the slowest here
    # 65 | 52 then 39 | 26: both workers end at 91 s, after 2 s of starting
    assert b.refit_estimate == pytest.approx(
        ALONE_SHARE * 1.3 * sum(likely) / 2 + WORKER_START_SECONDS)
    assert b.restart_pays()
    assert b.attempts_end() < b.started + 60 - b.refit_estimate + 1e-9


def test_quick_members_are_refit_in_this_process_as_the_killed_workers_cannot_help():
    """Measured on a 60 s search (Hotel rates): five members' refit, kept back as 5.4 s (their
    costs over two workers), ran 8.3 s one after another in this process because the spent
    budget had killed the workers. Now the estimate is the series, or restarted workers when
    their start pays."""
    b = budget(after_loop=True, workers=2)
    for seconds in (0.9, 1.2, 1.3):
        b.note_refit_cost(attempt(0.8), fit_seconds=seconds / 1.3, n_folds=1,
                          fold_preprocess_seconds=0.0)
    # in series (2.4 s) sooner than on restarted workers (0.9 s + 2 s)
    assert b.refit_estimate == pytest.approx(ALONE_SHARE * (0.9 + 1.2 + 1.3))
    assert not b.restart_pays()
    hotel = [0.9, 1.2, 1.34, 4.1, 4.14]  # its members' estimated costs, in their order
    assert makespan(hotel, 2) == pytest.approx(0.9 + 1.34 + 4.14)  # the first free worker
    assert makespan(hotel, 2) + WORKER_START_SECONDS < sum(hotel)  # restarting pays here
    assert makespan(hotel, 1) == pytest.approx(sum(hotel))


def test_the_refit_on_all_rows_is_kept_back_with_the_share_its_decision_uses():
    """The loop keeps back the refit on all rows as ``full_refit_share`` of the first refit and
    the front door checks it with the same figure: when they disagreed (1.3 kept, 1.375
    checked) a 60 s search kept 6 s back for a refit it then skipped."""
    assert full_refit_share(8000, 2000) == pytest.approx(1.1 * 1.25)
    assert full_refit_share(8000, 0) == 0.0  # no holdout rows: no refit on all rows follows
    b = budget(after_loop=False)
    b.full_refit = full_refit_share(8000, 2000)
    b.note_refit_cost(attempt(0.8), fit_seconds=5.0, n_folds=5, fold_preprocess_seconds=0.0)
    assert b.kept_back(b.started + 59.0) == pytest.approx((1 + 1.375) * ALONE_SHARE * 1.3)
    off = LoopBudget(SearchSettings(time_budget=60, refit_full=False), {}, False)
    off.full_refit = b.full_refit
    off.note_refit_cost(attempt(0.8), fit_seconds=5.0, n_folds=5, fold_preprocess_seconds=0.0)
    assert off.kept_back(off.started + 59.0) == pytest.approx(ALONE_SHARE * 1.3)


@pytest.mark.search
def test_the_search_sizes_the_full_refit_from_its_holdout_rows(churn_small):
    import numpy as np

    from mlflow_agentic import SequenceProposer
    from mlflow_agentic.engine.search.loop import AgenticAutoML

    extra = churn_small.X.iloc[: churn_small.n_rows // 4]
    automl = AgenticAutoML(SequenceProposer([SolutionCandidate("linear", {})]), cv=3, n_jobs=1,
                           extra_X=extra)
    automl.solve(churn_small)
    assert automl.budget.full_refit == pytest.approx(
        full_refit_share(churn_small.n_rows, len(extra)))
    assert np.isfinite(automl.budget.full_refit) and automl.budget.full_refit > 1.1


def test_a_cheaper_attempt_selected_for_the_budget_says_so_not_the_tie_rule():
    from mlflow_agentic.core.types import EngineeringRun
    from mlflow_agentic.engine.after.selection import affordable

    slow, quick = attempt(0.95), attempt(0.80)
    history = [slow, quick]
    chosen, note, model = affordable(slow, history, lambda records: records[0] is quick)
    assert model is None  # no fold models kept: a cheaper attempt is refit
    assert chosen is quick and f"attempt {slow.index}'s refit would not fit" in note
    run = EngineeringRun(history, quick.candidate, quick.score, None, "roc_auc", 0.5, 2,
                         best_attempt=quick, top_attempt=slow, ties=(), selection_note=note)
    summary = run.summary()
    assert "one-standard-error" not in summary
    assert note in summary and f"{slow.index:02d}-linear 0.9500" in summary


def test_a_big_models_shipping_and_logging_are_kept_back_beyond_the_fixed_reserve():
    from mlflow_agentic.engine.search.budget import (
        LOG_FREE_MB,
        LOG_SECONDS_PER_MB,
        REFIT_GROWTH,
        SHIP_SECONDS_PER_MB,
    )

    small, big = budget(after_loop=False), budget(after_loop=False)
    small.note_refit_cost(attempt(0.8), fit_seconds=5.0, n_folds=5, fold_preprocess_seconds=0.0,
                          model_mb=1.0)
    big.note_refit_cost(attempt(0.8), fit_seconds=5.0, n_folds=5, fold_preprocess_seconds=0.0,
                        model_mb=200.0)  # a forest of full-depth trees
    refit_mb = REFIT_GROWTH * 200.0
    assert small.refit_estimate == pytest.approx(
        ALONE_SHARE * (1.3 + SHIP_SECONDS_PER_MB * REFIT_GROWTH))
    assert big.refit_estimate == pytest.approx(
        ALONE_SHARE * (1.3 + SHIP_SECONDS_PER_MB * refit_mb)
        + LOG_SECONDS_PER_MB * (refit_mb - LOG_FREE_MB))
    assert big.attempts_end() < small.attempts_end() - 3.0  # the loop stops seconds earlier for it


def test_a_bag_too_big_to_log_in_time_is_not_served_a_cheaper_refit_is():
    import time

    from mlflow_agentic.engine.after.selection import affordable

    b = budget(after_loop=False)
    forest, linear = attempt(0.95), attempt(0.80)
    b.note_refit_cost(forest, fit_seconds=200.0, n_folds=5, fold_preprocess_seconds=0.0,
                      model_mb=400.0)  # 5 fold models: 2 GB to log
    b.note_refit_cost(linear, fit_seconds=1.0, n_folds=5, fold_preprocess_seconds=0.0,
                      model_mb=0.01)
    b.loop = Deadline(time.perf_counter() - 50, 60)  # 10 s left of 60
    assert not b.refit_fits([forest]) and not b.refit_fits([forest], bag=True)
    assert b.refit_fits([linear]) and b.refit_fits([linear], bag=True)
    served = []
    chosen, note, model = affordable(forest, [forest, linear], b.refit_fits,
                                     lambda r: served.append(r) or "bag")
    assert not served and model is None  # the bag was not even built
    assert chosen is linear and "refit would not fit" in note

    b.model_mb[forest.index] = 1.0  # a small forest: its bag logs in time, and is served
    chosen, note, model = affordable(forest, [forest, linear], b.refit_fits, lambda r: "bag")
    assert chosen is forest and model == "bag" and "average of its fold models" in note


@pytest.mark.search
def test_a_budget_spent_before_the_loop_starts_no_attempt_and_says_so(churn_small,
                                                                      tracking_uri):
    import time

    from mlflow_agentic import SequenceProposer
    from mlflow_agentic.core.types import StopKind
    from mlflow_agentic.engine.search.reserves import (
        FINISH_SECONDS,
        FINISH_SHARE,
        loop_deadline,
    )
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    def loop_seconds(total, started, tracked, n_rows=0):
        return loop_deadline(Deadline(started, total), tracked, n_rows).seconds

    now = time.perf_counter()
    reserve = FINISH_SECONDS + FINISH_SHARE * 30.0  # kept back for recording
    assert loop_seconds(1.5, now, tracked=True) == 0.0  # 1 s + 3% kept: under MIN_LOOP_SECONDS
    assert loop_seconds(1.5, now, tracked=False) > 1.0
    assert loop_seconds(30.0, now - (30.0 - reserve - 1.5), tracked=True) > 1.0
    assert loop_seconds(30.0, now - (30.0 - reserve - 0.5), tracked=True) == 0.0  # under 1 s
    # rows cost the recording only beyond what the fixed reserve covers (50k: measured)
    small, mid, big = (loop_seconds(60.0, now, True, n_rows=n) for n in (0, 49_000, 1_050_000))
    assert mid == pytest.approx(small, abs=0.01) and big == pytest.approx(small - 15.0, abs=0.01)
    assert loop_deadline(Deadline(now, None), True).end is None  # no budget: no deadline
    tracker = MlflowTracker(register="never")
    result = run_search(churn_small, lambda: SequenceProposer([SolutionCandidate("linear", {})]),
                        cv=3, n_jobs=1, time_budget=1.5, tracker=tracker)
    run = result.run
    assert run.attempts == [] and run.model is None and run.stop.kind is StopKind.TIME
    assert "before the search" in run.stop.detail and "--time-budget" in run.stop.detail


def test_in_the_last_stretch_the_refit_kept_back_is_the_standing_ensembles():
    """The likely members are guessed ahead (each trainer's best); near the end the ensemble
    as it stands is known, and only its members' refit is kept back: a slow trainer's attempt
    the ensemble left out no longer ends the loop seconds early."""
    b = budget(after_loop=True, workers=2)
    slow = attempt(0.90, "random_forest")
    quick = [attempt(0.80 + i / 100) for i in range(3)]
    b.note_refit_cost(slow, fit_seconds=9.0, n_folds=1, fold_preprocess_seconds=0.0)
    for record in quick:
        b.note_refit_cost(record, fit_seconds=1.0, n_folds=1, fold_preprocess_seconds=0.0)
    b.full_refit = 0.3  # a refit on all rows of 30% more time follows the first
    refits, ahead = 1.3, b.refit_estimate
    # the forest is a likely member: on one restarted worker while the other fits the rest
    assert ahead == pytest.approx(ALONE_SHARE * 1.3 * 9.0 + WORKER_START_SECONDS)
    assert b.restart_pays()  # for the likely members, the forest among them
    chosen = [quick[-1].index, quick[-2].index]
    b.members_now = lambda: chosen
    assert not b.restart_pays()  # for the standing ones: two quick fits, no restart
    early = b.attempts_end()  # far from the end: the estimate made ahead
    assert early == pytest.approx(b.loop.started + 60 - 1.0 - refits * ahead, abs=1e-6)
    b.loop = Deadline(b.loop.started - 55, 60)  # as if 55 s were spent: the last stretch
    late = b.attempts_end()  # two quick members: one after another in this process
    quick_two = ALONE_SHARE * 1.3 * 2
    assert late == pytest.approx(b.loop.started + 60 - 1.0 - refits * quick_two, abs=1e-6)
    assert b.kept_back(b.loop.started + 59.0) == pytest.approx(refits * quick_two)
    b.members_now = lambda: [*chosen, 999]  # a member whose cost is unknown: the guess stays
    assert b.attempts_end() == pytest.approx(b.loop.started + 60 - 1.0 - refits * ahead, abs=1e-6)


@pytest.mark.search
def test_the_standing_ensemble_is_the_one_the_ensemble_step_chooses(churn_small):
    """What the budget keeps time back for is what the step after the loop then picks."""
    from mlflow_agentic.core.types import ENSEMBLE
    from mlflow_agentic.engine.search.loop import AgenticAutoML
    from mlflow_agentic.engine.search.steps import EnsembleStep
    from mlflow_agentic.proposers.sequence import SequenceProposer

    candidates = [SolutionCandidate("hist_gradient_boosting", {"max_iter": 40}),
                  SolutionCandidate("linear", {"C": 1.0}),
                  SolutionCandidate("random_forest", {"n_estimators": 30}),
                  SolutionCandidate("hist_gradient_boosting", {"max_iter": 80,
                                                               "learning_rate": 0.05})]
    automl = AgenticAutoML(SequenceProposer(candidates), cv=3, n_jobs=1,
                           trainers=["hist_gradient_boosting", "linear", "random_forest"],
                           after_loop=[EnsembleStep()], time_budget=600)
    run = automl.solve(churn_small)
    standing = automl.budget.members_now
    assert standing is not None  # the loop's budget asked it after every batch
    ensemble = next(a for a in run.attempts if a.candidate.trainer == ENSEMBLE)
    assert sorted(standing()) == sorted(ensemble.params["members"])

    # an ensemble that would not beat choosing the best single attempt is not kept back for:
    # that attempt alone is (a scripted selection scored just either side of the bar)
    from mlflow_agentic.engine.after.ensemble import EnsembleChoice
    from mlflow_agentic.engine.after.selection import nested_best

    class Scripted(EnsembleStep):
        def __init__(self, score: float) -> None:
            self.score, self.members = score, ()

        def choose(self, loop, ctx, pool):
            self.members = (pool[1].index, pool[2].index)
            return EnsembleChoice(self.members, (0.5, 0.5), (self.score,) * 3)

    singles = [a for a in run.attempts if a.candidate.trainer != ENSEMBLE]
    bar, best = nested_best(singles), max(singles, key=lambda a: a.score)
    for score, single in ((bar - 1e-6, True), (bar + 1e-6, False)):
        step = Scripted(score)
        standing.step, standing.key = step, ()
        assert standing() == ([best.index] if single else list(step.members))


def test_a_measured_selection_keeps_back_its_own_time_not_the_fixed_second():
    """Once the standing ensemble has timed the step's selection on the attempts so far, that
    (and its record) is kept back instead of ``AFTER_LOOP_RESERVE_SECONDS`` (0.2-0.6 s
    measured where 1 s was kept); a slow selection keeps back no more than the fixed second."""
    from mlflow_agentic.engine.search.budget import (
        AFTER_LOOP_RESERVE_SECONDS,
        SELECTION_RECORD_SECONDS,
    )

    b = budget(after_loop=True)
    b.note_refit_cost(attempt(0.8), fit_seconds=3.0, n_folds=3, fold_preprocess_seconds=0.0)
    guessed = b.attempts_end()
    b.note_selection(0.05)
    measured = 0.05 + SELECTION_RECORD_SECONDS
    assert b.attempts_end() - guessed == pytest.approx(AFTER_LOOP_RESERVE_SECONDS - measured)
    b.note_selection(5.0)
    assert b.attempts_end() == pytest.approx(guessed)


def test_a_refit_that_ends_sooner_on_fresh_workers_restarts_them(churn_small):
    """A spent budget killed the workers mid-fold; when the refit kept back is of slow members
    that ran side by side, the loop starts fresh workers (the ensemble is chosen while they
    import) and the refit runs on them; quick members stay in this process."""
    from mlflow_agentic import SequenceProposer
    from mlflow_agentic.engine.search.budget import restart_for_refit
    from mlflow_agentic.engine.search.loop import AgenticAutoML
    from mlflow_agentic.engine.workers.parallel import WorkerPool

    automl = AgenticAutoML(SequenceProposer([SolutionCandidate("linear", {})]), cv=3, n_jobs=2,
                           time_budget=60)
    automl.pool = pool = WorkerPool(2)  # as a spent budget leaves it: no workers running
    automl.budget.workers, automl.budget.after_loop = 2, True  # an ensemble's members
    for seconds in (0.5, 0.4, 0.3):
        automl.budget.note_refit_cost(attempt(0.8), fit_seconds=seconds, n_folds=1,
                                      fold_preprocess_seconds=0.0)
    assert not restart_for_refit(pool, automl.budget) and not pool.warm
    automl.budget.refit_costs.clear()
    for seconds in (20.0, 20.0, 20.0, 20.0):  # four forests: 80 s in series, 40 s side by side
        automl.budget.note_refit_cost(attempt(0.8, "random_forest"), fit_seconds=seconds,
                                      n_folds=1, fold_preprocess_seconds=0.0)
    try:
        assert restart_for_refit(pool, automl.budget) and pool.warm
        assert pool.submit(int, "7").result() == 7  # the refit's pool runs on them
    finally:
        pool.abort()


@pytest.mark.search
def test_a_budget_that_cuts_every_attempt_says_what_the_loop_spent_and_what_to_change(
        churn_small):
    """A budget too small for one attempt's folds (Grants at 20 s: 1,503 columns, the loop's
    share 4 s, its folds' preprocessing 6.5 s) leaves every attempt pruned unscored; the reason
    names the cut, the loop's seconds and the remedy, not only '8 pruned'."""
    from mlflow_agentic.engine.search.loop import AgenticAutoML
    from mlflow_agentic.proposers.sequence import SequenceProposer

    slow = [SolutionCandidate("random_forest", {"n_estimators": 3000})]
    automl = AgenticAutoML(SequenceProposer(slow), cv=5, n_jobs=2, trainers=["random_forest"],
                           time_budget=0.4)
    run = automl.solve(churn_small)
    assert run.best_candidate is None
    assert [a.status for a in run.attempts] == ["pruned"]
    why = run.why_nothing_verified()
    assert why.startswith("the time budget ran out before any attempt finished its folds")
    assert "1 pruned unscored" in why and f"the loop ran {run.wall_seconds:.1f}s" in why
    assert why.endswith("give a larger --time-budget") and why in run.summary()


@pytest.mark.search
def test_a_wide_tables_preprocessing_stops_at_the_deadline():
    """Three styles of a 6,000 x 1,500 table cannot be preprocessed in a 2 s loop (Grants at
    20 s: 8.6 s of preprocessing ran the command to 25 s): the preprocessing stops at the
    deadline, and the attempts whose folds it did not prepare are cut before they start. (At
    0.5 s the loop's own start could spend the budget before the first batch: no attempt.)"""
    import numpy as np
    import pandas as pd

    from mlflow_agentic.data import Dataset
    from mlflow_agentic.engine.search.loop import AgenticAutoML
    from mlflow_agentic.proposers.sequence import SequenceProposer

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(6000, 1500)), columns=[f"c{i}" for i in range(1500)])
    frame["y"] = np.where(frame["c0"] + rng.normal(size=6000) > 0, "yes", "no")
    wide = Dataset.from_frame(frame, target="y")

    class OneBatch(SequenceProposer):  # three styles in the first batch, as the seeds are
        def propose_initial(self, dataset, trainers):
            return list(self.candidates)

        def propose_next(self, dataset, history, trainers):
            return None

    plan = [SolutionCandidate(t, {}) for t in ("linear", "random_forest",
                                                "hist_gradient_boosting")]
    automl = AgenticAutoML(OneBatch(plan), cv=5, n_jobs=2, time_budget=2.0,
                           trainers=["linear", "random_forest", "hist_gradient_boosting"])
    run = automl.solve(wide)
    assert run.best_candidate is None and [a.status for a in run.attempts] == ["pruned"] * 3
    assert [a.pruned for a in run.attempts][-1] == (  # its style was never prepared, nor fitted
        "time budget spent before its folds were preprocessed (0 of 5 folds)")



def test_a_code_candidate_cut_before_its_batch_says_its_sandbox_run_never_started(churn_small):
    """Code mode runs its own folds in the sandbox: when the budget is spent before its batch,
    its cut reason names the sandbox run, not preprocessing it never asked for (and no
    container is started for it)."""
    from mlflow_agentic.engine.evaluate.cv import make_splits
    from mlflow_agentic.engine.evaluate.folds import FoldData
    from mlflow_agentic.engine.evaluate.outcome import Planned
    from mlflow_agentic.engine.search.batch import BatchRunner, _State

    class NoSandbox:
        def run(self, *args, **kwargs):
            raise AssertionError("a cut candidate must not start a container")

    folds = FoldData(churn_small, make_splits(churn_small, 3, 0, "stratified"))
    runner = BatchRunner(folds, pool=None, metric=None, sandbox=NoSandbox())
    state = _State()
    plan = Planned(SolutionCandidate("code", {}), code="print('never run')")
    assert runner._build(plan, state, spent=True) is None
    assert state.done and state.outcome.pruned == (
        "time budget spent before its sandbox run started (0 of 3 folds)")

def test_the_first_model_loggings_one_time_work_is_done_while_the_search_runs():
    """The recording after the loop keeps back 1 s + 3%: MLflow's map of installed packages
    (its requirements check) and the plot's import are done by ``warm_up`` meanwhile."""
    import sys

    from mlflow.utils import requirements_utils

    from mlflow_agentic.tracking.registry.models import warm_up

    thread = warm_up()
    thread.join(timeout=120)
    assert not thread.is_alive() and thread.daemon  # never holds the command's exit
    assert requirements_utils._MODULES_TO_PACKAGES is not None  # log_model will not map again
    assert "matplotlib.figure" in sys.modules
