"""``SharedOptunaProposer``: one worker's view of the shared study (ask, tell, heartbeat)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, StopKind, StopReason
from mlflow_agentic.distributed.study import SharedStudy, heartbeat_seconds
from mlflow_agentic.proposers.optuna import OptunaProposer

if TYPE_CHECKING:
    from mlflow_agentic.core.dataset_like import DatasetLike


class SharedOptunaProposer(OptunaProposer):
    """Asks the shared study one trial at a time until it holds ``n_trials``; beats for the
    trials it holds, so a worker that dies leaves them FAIL (failed by the next worker to ask),
    never RUNNING forever. The first worker enqueues the portfolio's starts; any worker may
    take them."""

    batch_size = 1

    def __init__(self, shared: SharedStudy, seed: int, n_trials: int, first: bool,
                 portfolio: str = "builtin") -> None:
        super().__init__(seed=seed, storage=shared.storage, study_name=shared.name,
                         seed_defaults=first, portfolio=portfolio)
        self.shared, self.n_trials = shared, n_trials
        self.stop_reason: StopReason | None = None
        self._held: dict[int, int] = {}  # trial number -> trial id
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True,
                                      name="optuna-heartbeat")

    def propose_initial(self, dataset: DatasetLike,
                        trainers: Sequence[str]) -> list[SolutionCandidate]:
        if self.seed_defaults:
            self._create_study(dataset, trainers)
            self._enqueue_starts(dataset, trainers)
        self._beat.start()
        first = self.propose_next(dataset, (), trainers)
        return [first] if first is not None else []

    def propose_next(self, dataset: DatasetLike, history: Sequence[AttemptRecord],
                     trainers: Sequence[str]) -> SolutionCandidate | None:
        if self.study is None:
            self._create_study(dataset, trainers)
        self.shared.fail_dead_trials()  # a dead worker's trials: FAIL
        n = len(self.shared.study.get_trials(deepcopy=False))
        if n >= self.n_trials:
            self.stop_reason = StopReason(StopKind.EXHAUSTED, f"the study has its "
                                          f"{self.n_trials} trials ({n} asked by all workers)")
            return None
        candidate = self._ask(dataset, trainers, None)
        number = candidate.trial
        assert number is not None, "an asked trial has its number"
        storage = self.shared.storage
        trial_id = storage.get_trial_id_from_study_id_trial_number(
            storage.get_study_id_from_name(self.shared.name), number)
        storage.record_heartbeat(trial_id)
        with self._lock:
            self._held[number] = trial_id
        return candidate

    def observe(self, record: AttemptRecord) -> None:
        super().observe(record)
        with self._lock:
            if record.candidate.trial is not None:
                self._held.pop(record.candidate.trial, None)

    def abandon(self) -> None:
        """This worker stops (an error, SIGTERM): the trials it holds end FAIL now."""
        from optuna.trial import TrialState

        self._stop.set()
        with self._lock:
            held, self._held = list(self._held), {}
        for number in held:
            with contextlib.suppress(Exception):  # already told, or the storage is gone
                self.shared.study.tell(number, state=TrialState.FAIL)

    def close(self) -> None:
        self._stop.set()

    def _heartbeat(self) -> None:
        while not self._stop.wait(heartbeat_seconds()):
            with self._lock:
                ids = list(self._held.values())
            for trial_id in ids:
                with contextlib.suppress(Exception):  # the next beat tries again
                    self.shared.storage.record_heartbeat(trial_id)
