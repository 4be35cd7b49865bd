"""``LoopBudget``: how much of its bounds a search has spent, and its deadline.

The settings say the bounds (``max_iterations``, ``patience``, ``max_attempts``,
``time_budget``); this is the arithmetic on them: how many candidates the next batch may have,
when the loop must stop to leave time for the refit and the steps after the loop, and where a
resumed search's loop had ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from mlflow_agentic.core.deadline import Deadline
from mlflow_agentic.core.settings import SearchSettings
from mlflow_agentic.core.types import COMBINERS, AttemptRecord, StopKind, StopReason
from mlflow_agentic.engine.after.selection import diverse_first
from mlflow_agentic.engine.search.reserves import (
    AFTER_LOOP_RESERVE_SECONDS,
    ALONE_SHARE,
    ENSEMBLE_MEMBERS,
    LOG_FREE_MB,
    LOG_SECONDS_PER_MB,
    REFIT_GROWTH,
    REFIT_TOLERANCE,
    SELECTION_RECORD_SECONDS,
    SHIP_SECONDS_PER_MB,
    WORKER_START_SECONDS,
)
from mlflow_agentic.engine.workers.parallel import WorkerPool


def makespan(costs: Sequence[float], workers: int) -> float:
    """When the last of these fits ends, each started in order on the first free worker (how
    the pool runs a refit's members)."""
    free = [0.0] * max(workers, 1)
    for cost in costs:
        i = free.index(min(free))
        free[i] += cost
    return max(free)


class LoopBudget:
    """The loop's budget; ``start()`` at the beginning of ``solve`` starts its wall clock."""

    def __init__(self, settings: SearchSettings, restored: Mapping, after_loop: bool,
                 deadline: Deadline | None = None) -> None:
        self.settings = settings
        self.given = deadline
        self.loop = deadline or Deadline.starting(settings.time_budget)
        """The loop's deadline (its refit included; ``seconds`` None: no time budget). The
        front door gives it the command's end less the recording after the loop
        (``reserves.loop_deadline``); without one, ``time_budget`` from ``start()``."""
        self.restored = restored
        self.after_loop = after_loop
        self.started = time.perf_counter()
        self.refit_estimate = 0.0
        self.refit_costs: dict[int, tuple[float, float]] = {}
        """Attempt index -> (utility, estimated refit seconds) of every verified attempt."""
        self.model_mb: dict[int, float] = {}
        """Attempt index -> the size of one of its fold models (MB), where the workers kept
        them: what its refit ships back and its logging writes."""
        self.trainer: dict[int, str] = {}
        """Attempt index -> its trainer (the likely ensemble members are of different ones)."""
        self.n_folds = 1
        self.workers = 1
        """How many refits run at once (the loop sets its worker count)."""
        self.selection_seconds: float | None = None
        """What the ensemble step's selection will take, measured in the last stretch
        (``note_selection``)."""
        self.full_refit = 0.0
        """The refit on all rows against the first (``full_refit_share``; 0: none follows)."""
        self.likely: Sequence[int] = ()
        """The attempts whose refit is kept back until the last stretch: the best, or the
        likely ensemble members guessed ahead (``note_refit_cost``)."""
        self.members_now: Callable[[], Sequence[int]] | None = None
        """The members the ensemble step would choose now (attempt indices; the loop sets it
        when an ensemble follows): in the last stretch the refit kept back is theirs, not the
        likely members' guessed ahead."""

    @property
    def seconds(self) -> float | None:
        """The loop's time (refit included), or None without a time budget."""
        return self.loop.seconds

    def start(self) -> None:
        self.started = time.perf_counter()
        if self.given is None:  # no deadline carried down (the Python API): from now
            self.loop = Deadline.starting(self.settings.time_budget, self.started)
        self.refit_estimate, self.refit_costs, self.model_mb, self.trainer = 0.0, {}, {}, {}

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def note_refit_cost(self, record: AttemptRecord, fit_seconds: float, n_folds: int,
                        fold_preprocess_seconds: float, model_mb: float | None = None) -> None:
        """What the final refit may cost: the best attempt's (one fold's fit on k/(k-1) the
        rows, plus one fold's preprocessing in the attempt's style, which the folds had
        ready-made: a refit does its own, seconds on a big file; its own style's only, not every
        style's), or, when an ensemble
        step follows, its likely members' (``ENSEMBLE_MEMBERS`` attempts, each trainer's best
        first, as the ensemble's candidates are taken; refit side by side on the workers). With
        ``model_mb`` (one fold model's size), the model's way back and its logging too: a
        forest of a hundred MB takes seconds to ship and log. With ``settings.bag`` the refit's
        time is kept back all the same: logging k fold models of a forest costs about what
        the refit saves (keeping back only their read-back let a 60 s search end at 66.5 s)."""
        n = max(n_folds, 1)
        self.n_folds = n
        if model_mb is not None:
            self.model_mb[record.index] = model_mb
        mb = REFIT_GROWTH * (model_mb or 0.0)
        cost = (fit_seconds / n + fold_preprocess_seconds) * 1.3 + SHIP_SECONDS_PER_MB * mb
        self.refit_costs[record.index] = (record.utility, cost)
        self.trainer[record.index] = record.candidate.trainer
        ranked = sorted(self.refit_costs, key=lambda i: self.refit_costs[i], reverse=True)
        members = ENSEMBLE_MEMBERS if self.after_loop else 1
        self.likely = diverse_first(ranked, self.trainer.__getitem__)[:members]
        self.refit_estimate = self.refit_seconds(self.likely)

    def note_selection(self, seconds: float) -> None:
        """The ensemble step's selection (greedy weights on every row and nested on each
        fold) took ``seconds`` on the attempts so far: kept back for it, with its record,
        instead of the fixed second."""
        self.selection_seconds = seconds + SELECTION_RECORD_SECONDS

    def refit_seconds(self, indices: Sequence[int]) -> float:
        """Refitting these attempts, and logging the model (an attempt without a measured cost
        counts nothing): one after another in this process, or side by side on restarted
        workers when that ends sooner (``restart_pays``); ``ALONE_SHARE`` of the fold fits'
        estimates either way. A spent budget kills the workers mid-fold, so the refit cannot
        count on them: fits counted side by side ran in series (a 60 s search's refit ran
        8.3 s, kept back as 5.4 s)."""
        return (ALONE_SHARE * self._run_seconds(self._costs(indices))
                + self.logging_seconds(REFIT_GROWTH * self._fold_mb(indices)))

    def _costs(self, indices: Sequence[int]) -> list[float]:
        """Each attempt's estimated refit seconds (0 where none was measured)."""
        return [self.refit_costs.get(i, (0.0, 0.0))[1] for i in indices]

    def _run_seconds(self, costs: Sequence[float]) -> float:
        """The fits' estimates in series, or on restarted workers when that ends sooner (their
        start counted at the estimates' scale)."""
        serial = sum(costs)
        if self.workers <= 1:
            return serial
        return min(serial, makespan(costs, self.workers)
                   + WORKER_START_SECONDS / ALONE_SHARE)

    def standing(self) -> Sequence[int] | None:
        """The members the ensemble step would choose now, when each has a measured refit cost
        (None without an ensemble step or before its members are known)."""
        members = self.members_now() if self.members_now is not None else None
        if members and all(i in self.refit_costs for i in members):
            return members
        return None

    def restart_pays(self) -> bool:
        """Whether the refit kept back at the loop's end (the standing members', else the
        likely ones') ends sooner on restarted workers than one fit after another in this
        process."""
        costs = self._costs(self.standing() or self.likely)
        return self._run_seconds(costs) < sum(costs)

    @property
    def tolerance_seconds(self) -> float:
        """How far past its share a refit may end (``REFIT_TOLERANCE`` of the loop's share;
        0 without a time budget): the first refit and the refit on all rows alike."""
        return REFIT_TOLERANCE * (self.seconds or 0.0)

    def full_refit_end(self) -> float | None:
        """When the refit on all rows must end (a ``time.perf_counter()`` value; None without
        a time budget): the end of the loop's share, which kept it back, with the first
        refit's tolerance: a second's overrun beats serving a model that never saw a fifth of
        the rows. The recording after it has its own reserve, which this deadline leaves
        alone."""
        end = self.loop.end
        return None if end is None else end + self.tolerance_seconds

    def _fold_mb(self, indices: Iterable[int]) -> float:
        """One fold model's size (MB) of each of these attempts, summed (0 where not kept)."""
        return sum(self.model_mb.get(i, 0.0) for i in indices)

    def logging_seconds(self, mb: float) -> float:
        """Logging a model of ``mb`` after the loop, beyond what the fixed reserve covers."""
        return LOG_SECONDS_PER_MB * max(mb - LOG_FREE_MB, 0.0)

    def refit_fits(self, records: Sequence[AttemptRecord], bag: bool = False,
                   tolerance: bool = True) -> bool:
        """Whether refitting ``records`` side by side on the workers and logging the model end
        within the loop's share of the budget (always, without one): an attempt that finished
        late must not push the command past its budget. ``bag``: whether serving their fold
        models' average (no refit: the k fold models read back and logged) ends within it.
        ``tolerance``: whether ``REFIT_TOLERANCE`` may be spent (the selected attempt only)."""
        left = self.loop.left()
        if left is None:
            return True
        left += self.tolerance_seconds if tolerance else 0.0
        indices = [r.index for r in records]
        if bag:
            mb = self.n_folds * self._fold_mb(indices)
            return SHIP_SECONDS_PER_MB * mb + self.logging_seconds(mb) <= left
        return self.refit_seconds(indices) <= left

    def attempts_end(self) -> float | None:
        """When the loop stops its attempts: its end less the later steps and the refit."""
        end = self._refit_end()
        return None if end is None else end - self.kept_back(end)

    def _refit_end(self) -> float | None:
        """The loop's end with the steps after it kept back, before the refit's share."""
        if self.loop.seconds is None:
            return None
        reserve = 0.0
        if self.after_loop:
            reserve = min(AFTER_LOOP_RESERVE_SECONDS, 0.1 * self.loop.seconds)
            if self.selection_seconds is not None:
                reserve = min(reserve, self.selection_seconds)
        return self.loop.before(reserve)

    def kept_back(self, end: float) -> float:
        """The seconds kept back before ``end`` for the refit (and the refit on all rows)."""
        refits = 1 + (self.full_refit if self.settings.refit_full else 0.0)
        kept = refits * self.refit_estimate
        if self.members_now is not None and time.perf_counter() >= end - 2 * kept:
            # the last stretch: keep back the refit of the ensemble as it stands (measured
            # costs of its actual members), not of the likely members guessed ahead
            members = self.standing()
            if members:
                kept = refits * self.refit_seconds(members)
        return kept

    def spent(self, n_attempts: int) -> StopReason | None:
        """Why the budget stops the search now, or None while some is left."""
        s = self.settings
        ended = self.resumed_loop_end()
        if ended is not None and n_attempts >= ended:
            return StopReason(StopKind.ATTEMPTS, f"resumed: the killed search had ended its "
                              f"loop after attempt {ended} and recorded its ensemble")
        if s.max_attempts is not None and n_attempts >= s.max_attempts:
            return StopReason(StopKind.ATTEMPTS, f"attempt budget spent: {n_attempts} of "
                              f"{s.max_attempts} attempts")
        if self.seconds is not None and self.seconds <= 0:
            return StopReason(StopKind.TIME, f"time budget spent before the search: loading, "
                              f"sealing and the recording after it need the whole "
                              f"{s.time_budget or 0:g}s; give a larger --time-budget")
        end = self._refit_end()
        kept = 0.0 if end is None else self.kept_back(end)
        if end is not None and time.perf_counter() >= end - kept:
            return StopReason(StopKind.TIME, self._spent_words(kept))
        return None

    def _spent_words(self, kept: float) -> str:
        """The stop in the user's terms: their budget, and how it was shared."""
        total, seconds = self.settings.time_budget, self.seconds or 0.0
        share = f"{seconds:.1f}s for the search, {kept:.1f}s of it kept for the refit"
        if total is None:  # a loop budget given alone (the Python API)
            return f"time budget spent: searched {self.elapsed():.1f}s ({share})"
        return (f"time budget spent: searched {self.elapsed():.1f}s ({total:g}s budget: "
                f"{share}; {max(total - seconds, 0.0):.1f}s for reading, sealing and "
                "recording)")

    def exhausted(self, iterations: int, patience_left: int | None) -> StopReason | None:
        """The iteration and patience bounds (seeds do not count against them)."""
        s = self.settings
        if s.max_iterations is not None and iterations >= s.max_iterations:
            return StopReason(StopKind.ITERATIONS, f"reached max_iterations={s.max_iterations}")
        if patience_left is not None and patience_left <= 0:
            return StopReason(StopKind.PATIENCE, f"patience exhausted: {s.patience} attempts "
                              "without a verified improvement")
        return None

    def batch(self, batch_size: int, iterations: int, n_attempts: int,
              patience_left: int | None) -> int:
        """How many candidates the next batch may ask for, within every bound."""
        s = self.settings
        n = max(1, batch_size)
        if s.max_iterations is not None:
            n = min(n, s.max_iterations - iterations)
        if s.max_attempts is not None:
            n = min(n, s.max_attempts - n_attempts)
        ended = self.resumed_loop_end()
        if ended is not None:  # the killed search's loop ended there
            n = min(n, ended - n_attempts)
        if patience_left is not None:  # a batch never runs past the patience
            n = min(n, patience_left)
        return max(n, 0)

    def resumed_loop_end(self) -> int | None:
        """In a resumed search whose ensemble was recorded: the last attempt of its loop (it
        ended there, by whatever budget it had; a resume's budget may be larger)."""
        ensembles = [i for i, r in self.restored.items() if r.trainer in COMBINERS]
        return min(ensembles) - 1 if ensembles else None


def restart_for_refit(pool: WorkerPool, budget: LoopBudget) -> bool:
    """Restart the workers a spent budget killed when the refit ``budget`` kept back ends
    sooner on them (``LoopBudget.restart_pays``): they import while the ensemble is chosen,
    and both refits use them (``refit_pool``). Returns whether it did."""
    if pool.warm or not budget.restart_pays():
        return False
    pool.warm_up()
    return True
