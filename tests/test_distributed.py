"""Scale-out on real services: worker processes sharing one Optuna study in PostgreSQL and one
MLflow tracking server backed by PostgreSQL; ``finalize`` registers once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import mlflow
import optuna
import pytest
from optuna.trial import TrialState

from mlflow_agentic.distributed.study import SharedStudy, open_storage
from mlflow_agentic.tracking.live import worker_label
from tests.conftest import ROOT
from tests.servers import free_port, postgres
from tests.test_hardening import mlflow_server
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # PostgreSQL, a tracking server and worker processes

CLI = [sys.executable, "-m", "mlflow_agentic"]


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    """PostgreSQL (databases mlflow and optuna) and an MLflow server backed by it."""
    tmp = tmp_path_factory.mktemp("services")
    port = free_port()
    with postgres(("mlflow", "optuna")) as urls, mlflow_server(tmp, port, urls["mlflow"]):
        yield SimpleNamespace(tracking=f"http://127.0.0.1:{port}", storage=urls["optuna"])


@pytest.fixture(scope="module")
def churn_csv(tmp_path_factory, churn_frame):
    path = tmp_path_factory.mktemp("data") / "churn.csv"
    churn_frame.to_csv(path, index=False)
    return path


def start(services, command: str, study: str, csv, *extra: str, env=None) -> subprocess.Popen:
    args = [*CLI, command, "--study", study, "--storage", services.storage, "--data", str(csv),
            "--tracking-uri", services.tracking, "--quiet", *extra]
    if command == "worker":
        args += ["--cv", "3", "--n-jobs", "1", "--experiment", study]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.Popen(args, cwd=os.path.dirname(csv), env=environment, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def finish(proc, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def wait_for_attempts(services, experiment: str, n: int, proc, timeout: float = 180,
                      status: str = "FINISHED") -> None:
    client = mlflow.MlflowClient(tracking_uri=services.tracking)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        found = client.get_experiment_by_name(experiment)
        if found is not None and len(client.search_runs(
                [found.experiment_id], "tags.`agentic.role` = 'attempt' and "
                f"attributes.status = '{status}'")) >= n:
            return
        time.sleep(0.2)
    pytest.fail(f"no {n} {status} attempts in {timeout:.0f}s")


def child_runs(services, run_id: str) -> list:
    client = mlflow.MlflowClient(tracking_uri=services.tracking)
    experiment = client.get_run(run_id).info.experiment_id
    return client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{run_id}'",
                              max_results=1000)


def kill_inside_a_trial(services, worker, study, tries: int = 50) -> list[int]:
    """SIGKILL the worker while it provably holds a trial whose attempt run has started: freeze
    it (SIGSTOP), look, and kill only then; otherwise let it go on and look again. The trial
    numbers it held."""
    for _ in range(tries):
        os.killpg(worker.pid, signal.SIGSTOP)
        time.sleep(0.5)  # a request it sent just before is answered by now
        held = {t.number for t in study.get_trials(states=(TrialState.RUNNING,))}
        running = [c for c in child_runs(services, study.user_attrs["mlflow_run_id"])
                   if c.info.status == "RUNNING"
                   and int(c.data.tags.get("optuna.trial", -1)) in held]
        if running:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
            return sorted(held)
        os.killpg(worker.pid, signal.SIGCONT)
        time.sleep(0.3)
    pytest.fail(f"the worker was never seen inside a trial in {tries} looks")


def test_two_workers_one_study_one_search_run_one_registered_version(services, churn_csv):
    workers = [start(services, "worker", "two", churn_csv, "--trainers",
                     "linear,random_forest,xgboost", "--n-trials", "10") for _ in range(2)]
    results = [finish(w) for w in workers]
    assert [r[0] for r in results] == [0, 0], results
    assert sum("created study 'two'" in r[2] for r in results) == 1
    assert sum("joined study 'two' and search run" in r[2] for r in results) == 1

    study = optuna.load_study(study_name="two", storage=services.storage)
    trials = study.get_trials()
    assert 10 <= len(trials) <= 11  # two workers may both take the last free place
    assert {t.state for t in trials} <= {TrialState.COMPLETE, TrialState.PRUNED}
    run_id = study.user_attrs["mlflow_run_id"]
    children = child_runs(services, run_id)
    numbers = [int(c.data.tags["optuna.trial"]) for c in children]
    assert sorted(numbers) == sorted(t.number for t in trials)  # each trial once, none lost
    assert {c.data.tags["attempt.index"] for c in children} == {str(n + 1) for n in numbers}
    parent = mlflow.MlflowClient(tracking_uri=services.tracking).get_run(run_id)
    assert parent.info.status == "RUNNING"  # until finalize
    assert len([k for k in parent.data.tags if k.startswith("worker.")]) == 2

    code, out, err = finish(start(services, "finalize", "two", churn_csv, "--register-name",
                                  "two-workers"))
    assert code == 0, err
    assert f"finalizing search run {run_id}: {len(children)} finished attempt(s) read back" in err
    assert "registered: models:/two-workers version 1" in out
    client = mlflow.MlflowClient(tracking_uri=services.tracking,
                                 registry_uri=services.tracking)
    (version,) = client.search_model_versions("name = 'two-workers'")
    selected = client.get_run(version.run_id)
    assert selected.data.tags["mlflow.parentRunId"] == run_id
    assert selected.data.tags["selected"] == "true"
    parent = client.get_run(run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["stop_reason"] == (f"finalized: the {len(children)} attempts of its "
                                               "workers")
    assert parent.data.tags["finalized"].startswith(f"{len(children)} finished attempt(s)")
    assert len(child_runs(services, run_id)) == len(children) + 1  # + the ensemble, once

    code, _, err = finish(start(services, "finalize", "two", churn_csv))
    assert code == 2 and "is already finalized" in err


def test_a_worker_on_other_rows_or_settings_refuses_to_join(services, churn_csv, churn_frame):
    code, _, err = finish(start(services, "worker", "join", churn_csv, "--trainers", "linear",
                                "--n-trials", "1"))
    assert code == 0, err
    other = churn_csv.with_name("other.csv")
    churn_frame.iloc[:700].to_csv(other, index=False)
    code, _, err = finish(start(services, "worker", "join", other, "--trainers", "linear"))
    assert code == 2
    assert "this worker cannot join study 'join': the training rows differ" in err
    code, _, err = finish(start(services, "worker", "join", churn_csv, "--trainers",
                                "linear,xgboost"))
    assert code == 2
    assert "trainers: the study has ['linear'], this worker ['linear', 'xgboost']" in err


def test_sqlite_storage_is_refused_for_a_second_live_worker(services, churn_csv, tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    local = SimpleNamespace(storage=storage, tracking=services.tracking)
    code, _, err = finish(start(local, "worker", "lite", churn_csv, "--trainers", "linear",
                                "--n-trials", "1"))
    assert code == 0, err  # one worker on sqlite is fine
    shared = SharedStudy("lite", open_storage(storage), storage)
    shared.open(create=False)
    shared.register(worker_label())  # this test process: a live worker on the study
    code, _, err = finish(start(local, "worker", "lite", churn_csv, "--trainers", "linear"))
    assert code == 2
    assert "sqlite cannot be shared by several workers" in err and "PostgreSQL" in err


def test_a_killed_worker_leaves_its_trial_failed_and_finalize_marks_its_run_killed(
        services, churn_csv):
    beat = {"MLFLOW_AGENTIC_HEARTBEAT_SECONDS": "1"}  # failed 3 s after its last heartbeat
    worker = start(services, "worker", "dies", churn_csv, "--trainers", "random_forest,linear",
                   "--n-trials", "30", env=beat)
    wait_for_attempts(services, "dies", 3, worker)
    study = optuna.load_study(study_name="dies", storage=services.storage)
    held = kill_inside_a_trial(services, worker, study)
    shared = SharedStudy("dies", open_storage(services.storage), services.storage)
    shared.open()
    # its heartbeats stopped: once past the 3 s grace its trials are no longer running
    assert wait_until(lambda: not {t.number for t in shared.running_trials()} & set(held), 60)

    code, out, err = finish(start(services, "finalize", "dies", churn_csv, "--no-register",
                                  env=beat))
    assert code == 0, err
    trials = {t.number: t.state for t in study.get_trials()}
    assert all(trials[n] == TrialState.FAIL for n in held)
    run_id = study.user_attrs["mlflow_run_id"]
    cut = [c for c in child_runs(services, run_id)
           if int(c.data.tags.get("optuna.trial", -1)) in held]
    assert cut and {c.info.status for c in cut} == {"KILLED"}
    assert "1 cut attempt(s) marked KILLED" in err or f"{len(cut)} cut attempt(s)" in err


def test_a_worker_killed_between_ask_and_its_first_heartbeat_does_not_block_finalize(
        services, monkeypatch):
    """Optuna counts a trial stale only by its last heartbeat row; a trial asked by a worker
    that died before beating has none, and would stay RUNNING forever (CI saw it once)."""
    monkeypatch.setenv("MLFLOW_AGENTIC_HEARTBEAT_SECONDS", "1")  # grace 3 s
    shared = SharedStudy("beatless", open_storage(services.storage), services.storage)
    shared.open()
    orphan = shared.study.ask()  # asked, never beaten: its worker is gone
    beating = shared.study.ask()
    shared.storage.record_heartbeat(beating._trial_id)
    assert {t.number for t in shared.running_trials()} == {orphan.number, beating.number}

    def beat_and_look() -> bool:  # past the grace the orphan is dead; the beating one lives
        shared.storage.record_heartbeat(beating._trial_id)
        return [t.number for t in shared.running_trials()] == [beating.number]

    assert wait_until(beat_and_look, 30, step=0.5)
    states = {t.number: t.state for t in shared.study.get_trials()}
    assert states[orphan.number] == TrialState.FAIL


def test_with_finalize_the_last_worker_finalizes_once(services, churn_csv):
    workers = [start(services, "worker", "last", churn_csv, "--trainers", "linear,xgboost",
                     "--n-trials", "8", "--finalize", "--register-name", "last-worker")
               for _ in range(2)]
    results = [finish(w) for w in workers]
    assert [r[0] for r in results] == [0, 0], results
    finalizers = [r for r in results if "this worker finished last: finalizing" in r[2]]
    assert len(finalizers) == 1
    assert "registered: models:/last-worker version 1" in finalizers[0][1]
    assert sum("another worker finalizes the search" in r[1] for r in results) == 1
    client = mlflow.MlflowClient(tracking_uri=services.tracking,
                                 registry_uri=services.tracking)
    assert len(client.search_model_versions("name = 'last-worker'")) == 1
    study = optuna.load_study(study_name="last", storage=services.storage)
    assert client.get_run(study.user_attrs["mlflow_run_id"]).info.status == "FINISHED"
