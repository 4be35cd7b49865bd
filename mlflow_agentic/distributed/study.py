"""The Optuna study workers share, and what it records about their search.

Optuna's RDB storage is the coordinator: an asked trial is taken by one worker only (enqueued
seeds included), heartbeats mark a dead worker's trial FAIL for the others, and the study's user
attributes carry the MLflow search run id, the digest of the training rows, and the settings
every worker must share. No scheduler of ours.
"""

from __future__ import annotations

import json
import os
import socket
import time
import warnings
from typing import TYPE_CHECKING

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.processes import process_alive

if TYPE_CHECKING:
    import optuna

HEARTBEAT_ENV = "MLFLOW_AGENTIC_HEARTBEAT_SECONDS"
"""How often a worker beats for the trials it holds (default 10 s); a trial whose worker has
not beaten for three times that is failed by the next worker to ask (a dead worker)."""


def heartbeat_seconds() -> int:
    return max(1, int(float(os.environ.get(HEARTBEAT_ENV, "10"))))


def grace_seconds() -> int:
    return 3 * heartbeat_seconds()
RUN_ATTR, DIGEST_ATTR, SETTINGS_ATTR = "mlflow_run_id", "train_digest", "search_settings"
WORKER_PREFIX = "worker."
SCHEMA_TRIES = 5


def _schema_race(exc: BaseException) -> bool:
    """Two workers creating a new storage's tables at once: one loses, and may try again."""
    text = str(exc)
    return any(marker in text for marker in ("UniqueViolation", "already exists",
                                             "duplicate key", "database is locked"))


def _quiet_optuna() -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """An RDB storage with heartbeats; a URL we cannot use is the user's to fix."""
    import optuna

    _quiet_optuna()
    if "://" not in url:
        raise UserInputError(f"--storage {url!r} is not a database URL; use e.g. "
                             "postgresql+psycopg2://user@host:5432/optuna")
    for attempt in range(SCHEMA_TRIES):
        try:
            return optuna.storages.RDBStorage(url, heartbeat_interval=heartbeat_seconds(),
                                              grace_period=grace_seconds())
        except Exception as exc:  # noqa: BLE001 - sorted below
            if _schema_race(exc) and attempt < SCHEMA_TRIES - 1:
                time.sleep(0.5 + attempt)  # another worker is creating the tables right now
                continue
            error = exc
            break
    raise UserInputError(f"cannot open the Optuna storage {url}: {type(error).__name__}: "
                         f"{str(error).splitlines()[0][:300]}. For PostgreSQL install the "
                         "driver (pip install 'mlflow-agentic[postgres]') and check the "
                         "server is up") from error


class SharedStudy:
    """Create or join the study ``name`` in ``storage`` (an ``RDBStorage``)."""

    def __init__(self, name: str, storage: optuna.storages.RDBStorage, url: str) -> None:
        self.name, self.storage, self.url = name, storage, url
        self._study: optuna.Study | None = None
        self.created = False

    @property
    def study(self) -> optuna.Study:
        """The study, once ``open`` made or joined it."""
        if self._study is None:
            raise RuntimeError(f"the study {self.name!r} is not open: call open() first")
        return self._study

    def open(self, sampler: optuna.samplers.BaseSampler | None = None, *,
             create: bool = True) -> optuna.Study:
        import optuna

        if create:
            try:  # exactly one worker creates it: the storage refuses a second study by name
                self._study = optuna.create_study(study_name=self.name, storage=self.storage,
                                                 direction="maximize", sampler=sampler)
                self.created = True
                return self.study
            except optuna.exceptions.DuplicatedStudyError:
                pass
        try:
            self._study = optuna.load_study(study_name=self.name, storage=self.storage,
                                           sampler=sampler)
        except KeyError as exc:
            raise UserInputError(f"no study {self.name!r} in {self.url}; start a worker with "
                                 "that --study first") from exc
        return self.study

    # ---- what the first worker records, the others check ----------------------------------
    def record(self, digest: str, settings: dict) -> None:
        self.study.set_user_attr(DIGEST_ATTR, digest)
        self.study.set_user_attr(SETTINGS_ATTR, json.dumps(settings, sort_keys=True))

    def settings(self) -> dict:
        return json.loads(self._wait_for(SETTINGS_ATTR))

    def check(self, digest: str, settings: dict) -> None:
        """A worker on another file, split or settings refuses to join (it would train on
        other rows, or score differently, than the attempts it would be ranked with)."""
        recorded = self.settings()
        problems = [f"{k}: the study has {recorded.get(k)!r}, this worker {v!r}"
                    for k, v in settings.items() if recorded.get(k) != v]
        if self.study.user_attrs.get(DIGEST_ATTR) != digest:
            problems.insert(0, "the training rows differ (another file, target, split or seed)")
        if problems:
            raise UserInputError(f"this worker cannot join study {self.name!r}: "
                                 + "; ".join(problems) + ". Start it with the same --data and "
                                 "settings as the first worker, or use another --study")

    def publish_run(self, run_id: str) -> None:
        self.study.set_user_attr(RUN_ATTR, run_id)

    def run_id(self, timeout: float = 120.0) -> str:
        return self._wait_for(RUN_ATTR, timeout)

    def _wait_for(self, key: str, timeout: float = 120.0) -> str:
        """An attribute the first worker sets after creating the study (seconds later)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.study.user_attrs.get(key)
            if value is not None:
                return value
            if time.monotonic() > deadline:
                raise UserInputError(f"study {self.name!r} has no {key} after {timeout:.0f}s: "
                                     "its first worker did not get far; start a new --study")
            time.sleep(0.5)  # user_attrs reads the storage each time

    # ---- who is working --------------------------------------------------------------------
    def register(self, label: str) -> None:
        """Note this worker in the study; refuse a second live one on sqlite."""
        if self.url.startswith("sqlite"):
            others = [k.removeprefix(WORKER_PREFIX) for k, v in self.study.user_attrs.items()
                      if k.startswith(WORKER_PREFIX) and v == "running"
                      and k != WORKER_PREFIX + label and _maybe_alive(k[len(WORKER_PREFIX):])]
            if others:
                raise UserInputError(
                    f"study {self.name!r} is in sqlite ({self.url}) and worker {others[0]} is "
                    "still on it. sqlite cannot be shared by several workers: it locks the "
                    "whole file on every write and is unsafe on network file systems. Use "
                    "PostgreSQL: --storage postgresql+psycopg2://user@host:5432/optuna")
        self.study.set_user_attr(WORKER_PREFIX + label, "running")

    def unregister(self, label: str, note: str = "done") -> None:
        self.study.set_user_attr(WORKER_PREFIX + label, note)

    def claim_finalize(self) -> bool:
        """True for exactly one caller: the storage refuses a second study of that name, the
        same guarantee that makes one worker the creator."""
        import optuna

        try:
            optuna.create_study(study_name=f"{self.name}.finalize", storage=self.storage)
        except optuna.exceptions.DuplicatedStudyError:
            return False
        return True

    def running_trials(self) -> list:
        """Trials still under way, after failing those whose worker died."""
        from optuna.trial import TrialState

        self.fail_dead_trials()
        return self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))

    def fail_dead_trials(self) -> None:
        """FAIL the trials of dead workers: those whose heartbeat stopped (Optuna's own check),
        and those that never beat, started over the grace ago. A worker killed between Optuna's
        ``ask`` and its first heartbeat leaves such a trial, which Optuna never counts stale:
        finalize would wait for it forever."""
        import contextlib
        from datetime import datetime, timedelta

        import optuna
        from optuna.trial import TrialState

        optuna.storages.fail_stale_trials(self.study)
        cutoff = datetime.now() - timedelta(seconds=grace_seconds())  # Optuna's local clock
        study_id = self.storage.get_study_id_from_name(self.name)
        old = [self.storage.get_trial_id_from_study_id_trial_number(study_id, t.number)
               for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
               if t.datetime_start is not None and t.datetime_start < cutoff]
        for trial_id in set(old) - self._beating(old):
            with contextlib.suppress(Exception):  # its worker told it after all
                self.storage.set_trial_state_values(trial_id, state=TrialState.FAIL)

    def _beating(self, trial_ids: list[int]) -> set[int]:
        """Which of these trials have a heartbeat row (Optuna's schema has no public read)."""
        if not trial_ids:
            return set()
        import sqlalchemy

        query = sqlalchemy.text("SELECT trial_id FROM trial_heartbeats "
                                "WHERE trial_id IN :ids").bindparams(
            sqlalchemy.bindparam("ids", expanding=True))
        with self.storage.engine.connect() as connection:
            return {row[0] for row in connection.execute(query, {"ids": trial_ids})}


def _maybe_alive(label: str) -> bool:
    """``host-pid`` may still run: another host (cannot tell), or this host's live pid."""
    host, _, pid = label.rpartition("-")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    return process_alive(int(pid))
