"""``OptunaProposer``: Optuna's TPE over a conditional space of the allowed trainers, via ask/tell.

Started from the portfolio of proven configurations (enqueued trials, ``trainers.portfolio``),
deterministic for a given ``seed``. With ``storage=`` (an RDB URL) several processes can share
one study.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

    from mlflow_agentic.core.dataset_like import DatasetLike
    from mlflow_agentic.core.observer import SearchContext

from mlflow_agentic.core.protocol import CandidateProposer
from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate
from mlflow_agentic.trainers.registry import get_trainer

TRAINER_PARAM = "trainer"


def _param_name(trainer: str, param: str) -> str:
    return f"{trainer}.{param}"


def _scored(record: AttemptRecord) -> bool:
    """A score the sampler may learn from: finite (not failed or pruned), not quarantined (a
    leaky region must not attract the sampler)."""
    return not record.verdict.quarantined and math.isfinite(record.utility)


class OptunaProposer(CandidateProposer):
    """TPE sampler (seeded); each proposal is an asked trial, each result is told back."""

    name = "optuna"
    batch_size = 4
    """Trials asked before the results are told (constant liar): their folds share the workers.
    Fixed, not tied to ``n_jobs``, so a seeded search proposes the same with any ``n_jobs``."""

    def __init__(self, seed: int = 0, storage: str | optuna.storages.BaseStorage | None = None,
                 study_name: str | None = None,
                 sampler: optuna.samplers.BaseSampler | None = None,
                 seed_defaults: bool = True, portfolio: str = "builtin") -> None:
        self.seed = seed
        self.portfolio = portfolio
        """The first trials: ``builtin`` (the shipped portfolio), ``defaults`` (each trainer at
        its defaults) or a portfolio JSON file (``trainers.portfolio``)."""
        self.storage = storage
        self.study_name = study_name
        self.sampler = sampler
        self.seed_defaults = seed_defaults
        self.study: optuna.Study | None = None
        self._pending: dict[int, tuple[SolutionCandidate, Any]] = {}

    # ---- protocol ---------------------------------------------------------------------------
    def start(self, context: SearchContext) -> None:
        """A large table searched against the clock is not seeded with the slow trainers
        (``portfolio.starts``): their first fits would take the minute the boosters need."""
        search = getattr(context, "search", None)
        self.slow_seeds = not (search is not None and search.time_budget is not None
                               and search.large_rows
                               and context.dataset.n_rows >= search.large_rows)

    slow_seeds = True

    def propose_initial(self, dataset: DatasetLike,
                        trainers: Sequence[str]) -> list[SolutionCandidate]:
        self._create_study(dataset, trainers)
        if not self.seed_defaults:
            return [self._ask(dataset, trainers, "optuna TPE (random start)")]
        whys = self._enqueue_starts(dataset, trainers)
        return [self._ask(dataset, trainers, f"{why} (enqueued Optuna trial)") for why in whys]

    def _enqueue_starts(self, dataset: DatasetLike, trainers: Sequence[str]) -> list[str]:
        """The portfolio's configurations, then the other trainers at their defaults, as the
        study's first trials; returns why each was chosen."""
        from mlflow_agentic.trainers.portfolio import starts

        whys, study = [], self._study(dataset, trainers)
        for name, params, why in starts(self.portfolio, dataset, trainers, self.slow_seeds):
            study.enqueue_trial(
                {TRAINER_PARAM: name, **{_param_name(name, k): v for k, v in params.items()}},
                skip_if_exists=self.storage is not None)
            whys.append(why)
        return whys

    def run_params(self) -> dict[str, str]:
        return {"portfolio": self.portfolio}

    def propose_next(self, dataset: DatasetLike, history: Sequence[AttemptRecord],
                     trainers: Sequence[str]) -> SolutionCandidate | None:
        return self._ask(dataset, trainers, None)

    def suggest(self, dataset: DatasetLike, trainers: Sequence[str], *, why: str = "",
                source: str = "") -> SolutionCandidate:
        """The study's next trial for another proposer (the LLM's fallback): ``why`` is added
        to the rationale, ``source`` marks the candidate; its result is told by ``observe``."""
        trial = self._study(dataset, trainers).ask()
        return self._candidate(dataset, trainers, trial,
                               f"{self._rationale(trial)}{why}", source)

    def observe(self, record: AttemptRecord) -> None:
        """Tell the study the CV score (as a higher-is-better utility), or FAIL (failed or
        quarantined: a leaky region must not attract the sampler)."""
        from optuna.trial import TrialState

        entry = self._pending.pop(id(record.candidate), None)
        if entry is None:
            return
        _, trial = entry
        study = trial.study
        if record.pruned is not None:
            study.tell(trial, state=TrialState.PRUNED)
        elif not _scored(record):
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, record.utility)

    def learn(self, dataset: DatasetLike, record: AttemptRecord, trainers: Sequence[str]) -> None:
        """Tell the study about an attempt someone else proposed (its params as a finished
        trial), so a study started late (the LLM's fallback) learns from the whole search."""
        import optuna
        from optuna.distributions import BaseDistribution, CategoricalDistribution
        from optuna.trial import TrialState

        name = record.candidate.trainer
        study = self._study(dataset, trainers)
        if name not in trainers:
            return
        params: dict[str, Any] = {TRAINER_PARAM: name}
        dists: dict[str, BaseDistribution] = {
            TRAINER_PARAM: CategoricalDistribution(list(trainers))}
        for key, spec in get_trainer(name).space(dataset).items():
            value = record.params.get(key)
            if spec.contains(value):
                params[_param_name(name, key)] = value
                dists[_param_name(name, key)] = spec.distribution()
        ok = _scored(record)
        study.add_trial(optuna.trial.create_trial(
            params=params, distributions=dists, value=record.utility if ok else None,
            state=TrialState.COMPLETE if ok else TrialState.FAIL))

    # ---- internals --------------------------------------------------------------------------
    def _study(self, dataset: DatasetLike, trainers: Sequence[str]) -> optuna.Study:
        """The study, created on first use."""
        if self.study is None:
            self._create_study(dataset, trainers)
        assert self.study is not None
        return self.study

    def _create_study(self, dataset: DatasetLike, trainers: Sequence[str]) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        sampler = self.sampler or self._default_sampler(trainers)
        self.study = optuna.create_study(
            direction="maximize", sampler=sampler, storage=self.storage,
            study_name=self.study_name, load_if_exists=self.storage is not None)

    def _default_sampler(self, trainers: Sequence[str]) -> optuna.samplers.BaseSampler:
        import optuna

        return optuna.samplers.TPESampler(
            seed=self.seed, multivariate=True, group=True, n_startup_trials=len(trainers),
            constant_liar=True)

    def _rationale(self, trial: optuna.trial.Trial) -> str:
        return f"optuna TPE trial #{trial.number} (seed {self.seed})"

    def _ask(self, dataset: DatasetLike, trainers: Sequence[str],
             rationale: str | None) -> SolutionCandidate:
        trial = self._study(dataset, trainers).ask()
        return self._candidate(dataset, trainers, trial, rationale or self._rationale(trial))

    def _candidate(self, dataset: DatasetLike, trainers: Sequence[str], trial: optuna.trial.Trial,
                   rationale: str,
                   source: str = "") -> SolutionCandidate:
        name = trial.suggest_categorical(TRAINER_PARAM, list(trainers))
        space = get_trainer(name).space(dataset)
        params = {k: spec.suggest(trial, _param_name(name, k)) for k, spec in space.items()}
        candidate = SolutionCandidate(name, params, rationale, source=source, trial=trial.number)
        self._pending[id(candidate)] = (candidate, trial)
        return candidate
