"""Resume: a search killed mid-way continues from what MLflow recorded, runs no finished attempt
again, and ends with the leaderboard an uninterrupted search of the same seed gives."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys

import mlflow
import pytest

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.observer import SearchObserver
from mlflow_agentic.frontdoor.api import search
from tests.conftest import ROOT
from tests.test_hardening import wait_for_finished_attempts

pytestmark = pytest.mark.slow  # searches killed and resumed, in subprocesses

SETTINGS = dict(trainers=["linear", "random_forest"], cv=3, seed=3, max_iterations=5,
                patience=3, n_jobs=1, portfolio="defaults")  # two starts, then batches of 4


class KillAfter(SearchObserver):
    """Interrupts the search right after attempt ``n`` is recorded (like Ctrl-C there)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def on_attempt_end(self, record) -> None:
        if record.index == self.n:
            raise KeyboardInterrupt


def board(result) -> list[tuple]:
    return [(a.index, a.candidate.trainer, dict(a.params), a.status, a.score, a.fold_scores)
            for a in result.run.attempts]


def attempt_runs(uri: str, parent: str) -> list:
    client = mlflow.MlflowClient(tracking_uri=uri)
    return client.search_runs([client.get_run(parent).info.experiment_id],
                              f"tags.`mlflow.parentRunId` = '{parent}'", max_results=1000)


@pytest.fixture(scope="module")
def churn_csv(tmp_path_factory, churn_frame):
    path = tmp_path_factory.mktemp("data") / "churn.csv"
    churn_frame.to_csv(path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, churn_csv):
    uri = f"sqlite:///{tmp_path_factory.mktemp('whole') / 'mlflow.db'}"
    return search(churn_csv, tracking_uri=uri, register=False, diagnostics=False, **SETTINGS)


def killed_search(uri: str, dataset, n: int = 3) -> str:
    with pytest.raises(KeyboardInterrupt):
        search(dataset, tracking_uri=uri, register=False, diagnostics=False,
               observers=[KillAfter(n)], **SETTINGS)
    client = mlflow.MlflowClient(tracking_uri=uri)
    (parent,) = client.search_runs(["1"], "tags.`agentic.role` = 'search'")
    assert parent.info.status == "KILLED"
    assert parent.data.tags["resume_with"] == f"--resume {parent.info.run_id}"
    return parent.info.run_id


def test_a_resumed_search_runs_nothing_twice_and_ends_as_the_uninterrupted_one(
        tmp_path, churn_csv, uninterrupted):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = killed_search(uri, churn_csv)
    before = {r.data.tags["attempt.index"]: r for r in attempt_runs(uri, parent)}
    status = {int(i): r.info.status for i, r in before.items()}
    assert [status.pop(i) for i in (1, 2, 3)] == ["FINISHED"] * 3
    assert status and set(status.values()) == {"KILLED"}  # the rest of the batch was under way

    result = search(churn_csv, tracking_uri=uri, register=False, diagnostics=False,
                    resume=parent, **SETTINGS)

    assert result.run_id == parent
    assert board(result) == board(uninterrupted)
    assert [a.restored for a in result.run.attempts[:4]] == [True] * 3 + [False]
    assert not any(a.restored for a in result.run.attempts[3:])
    assert result.run.best_attempt.index == uninterrupted.run.best_attempt.index
    assert math.isclose(result.holdout.selected.holdout, uninterrupted.holdout.selected.holdout,
                        rel_tol=0, abs_tol=1e-12)
    for index, score in uninterrupted.holdout.scores.items():  # restored holdout outputs too
        assert result.holdout.scores[index].holdout == pytest.approx(score.holdout, abs=1e-12)

    runs = attempt_runs(uri, parent)
    finished = [r for r in runs if r.info.status in ("FINISHED", "FAILED")]
    indices = sorted(int(r.data.tags["attempt.index"]) for r in finished)
    assert indices == list(range(1, len(uninterrupted.run.attempts) + 1))  # each exactly once
    for index in ("1", "2", "3"):  # the finished ones were kept, not run again
        assert any(r.info.run_id == before[index].info.run_id for r in finished)
    cut = [r for r in runs if r.info.status == "KILLED"]
    assert sorted(int(r.data.tags["attempt.index"]) for r in cut) == sorted(status)

    run = mlflow.MlflowClient(tracking_uri=uri).get_run(parent)
    assert run.info.status == "FINISHED"
    assert run.data.tags["resumed"] == "1" and "error" not in run.data.tags
    assert run.data.tags["resume.1"].startswith("3 finished attempt(s) read back")


class KillAtEnsemble(SearchObserver):
    """Interrupts the search once its ensemble is recorded (the loop had ended)."""

    def on_attempt_end(self, record) -> None:
        if record.phase == "ensemble":
            raise KeyboardInterrupt


def test_a_search_killed_after_its_ensemble_resumes_it_even_with_a_larger_budget(
        tmp_path, churn_csv):
    """The journal of a search cut after its loop holds the ensemble as the last attempt: the
    resume ends its loop where the killed one did (whatever budget it is given now) and
    replays the ensemble, instead of refusing because the proposer would propose there."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    settings = {**SETTINGS, "proposer": "random", "max_iterations": 2, "patience": 2}
    whole = search(churn_csv, tracking_uri=f"sqlite:///{tmp_path / 'whole.db'}",
                   register=False, diagnostics=False, **settings)
    with pytest.raises(KeyboardInterrupt):
        search(churn_csv, tracking_uri=uri, register=False, diagnostics=False,
               observers=[KillAtEnsemble()], **settings)
    client = mlflow.MlflowClient(tracking_uri=uri)
    (parent,) = client.search_runs(["1"], "tags.`agentic.role` = 'search'")
    larger = {**settings, "max_iterations": 9, "patience": 9}  # as a spent time budget is
    result = search(churn_csv, tracking_uri=uri, register=False, diagnostics=False,
                    resume=parent.info.run_id, **larger)
    assert board(result) == board(whole)
    assert all(a.restored for a in result.run.attempts)
    assert result.run.attempts[-1].phase == "ensemble"
    assert "resumed" in result.run.stop_reason
    assert client.get_run(parent.info.run_id).info.status == "FINISHED"


def test_a_resume_after_the_version_was_created_registers_no_second_version(tmp_path,
                                                                            churn_csv):
    """kill -9 between registering the version and ending the search run: the store holds the
    version (with its evidence), the search run not finished. The resume completes that
    version; it registers no second one of the same result."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = search(churn_csv, tracking_uri=uri, register_name="churn-once", diagnostics=False,
                   **SETTINGS)
    assert str(first.model_version.version) == "1"
    client = mlflow.MlflowClient(tracking_uri=uri)
    parent = first.run_id
    for key in ("registered_model", "registered_version", "status"):  # as the kill left it
        client.delete_tag(parent, key)
    client.delete_registered_model_alias("churn-once", "challenger")
    client.set_terminated(parent, "KILLED")
    again = search(churn_csv, tracking_uri=uri, register_name="churn-once",
                   diagnostics=False, resume=parent, **SETTINGS)
    versions = client.search_model_versions("name = 'churn-once'")
    assert [str(v.version) for v in versions] == ["1"]
    assert str(again.model_version.version) == "1"
    assert str(client.get_model_version_by_alias("churn-once", "challenger").version) == "1"
    tags = client.get_run(parent).data.tags
    assert (tags["registered_model"], tags["registered_version"]) == ("churn-once", "1")
    assert "no second version" in tags["mlflow.note.content"]


def test_resume_refuses_other_settings_a_finished_search_and_an_unknown_run(
        tmp_path, churn_csv, uninterrupted):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = killed_search(uri, churn_csv, n=2)
    changed = {**SETTINGS, "seed": 4}
    with pytest.raises(UserInputError, match=r"cannot resume search run .*seed: recorded '3', "
                                             r"now '4'"):
        search(churn_csv, tracking_uri=uri, register=False, resume=parent, **changed)
    import pandas as pd

    other_rows = pd.read_csv(churn_csv).iloc[:700]
    with pytest.raises(UserInputError, match="the training rows differ"):
        search(other_rows, "Churn", tracking_uri=uri, register=False, resume=parent,
               **SETTINGS)
    with pytest.raises(UserInputError, match="no run 'nope' in the tracking store"):
        search(churn_csv, tracking_uri=uri, register=False, resume="nope", **SETTINGS)
    run = mlflow.MlflowClient(tracking_uri=uri).get_run(parent)
    assert run.info.status == "KILLED"  # a refused resume changed nothing

    done = search(churn_csv, tracking_uri=uri, register=False, diagnostics=False,
                  resume=parent, **SETTINGS)
    assert done.run_id == parent
    with pytest.raises(UserInputError, match="finished; there is nothing to resume"):
        search(churn_csv, tracking_uri=uri, register=False, resume=parent, **SETTINGS)


def cli(uri: str, csv: str, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "mlflow_agentic", "run", "--data", csv, "--trainers",
               ",".join(SETTINGS["trainers"]), "--cv", "3", "--seed", "3", "--max-iterations",
               "5", "--patience", "3", "--n-jobs", "2", "--portfolio", SETTINGS["portfolio"],
               "--no-register", "--no-diagnostics", "--quiet", *extra]
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(command, cwd=os.path.dirname(csv), env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def test_kill_9_after_the_third_attempt_then_resume_from_the_command_line(
        tmp_path, churn_csv, uninterrupted):
    """Two worker processes, SIGKILL to the whole process group: nothing runs on exit. The
    resumed search (with 2 workers) ends with the serial uninterrupted search's leaderboard."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = cli(uri, churn_csv)
    wait_for_finished_attempts(uri, 3, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    client = mlflow.MlflowClient(tracking_uri=uri)
    (parent,) = client.search_runs(["1"], "tags.`agentic.role` = 'search'")
    assert parent.info.status == "RUNNING"  # nothing ran on kill -9
    first = [line for line in proc.stderr.read().splitlines()
             if not re.match(r"\d{4}/\d\d/\d\d ", line)][0]  # MLflow's own log lines aside
    assert first.startswith(f"search run {parent.info.run_id} ")  # said first, even --quiet
    kept = {r.info.run_id for r in attempt_runs(uri, parent.info.run_id)
            if r.info.status == "FINISHED"}
    assert len(kept) >= 3

    again = cli(uri, churn_csv, "--resume", "last")  # no id needed
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"--resume last: search run {parent.info.run_id}" in err
    # what the killed process finished but had not yet written comes from its journal first
    read_back = re.search(rf"resuming search run {parent.info.run_id}: (\d+) finished "
                          r"attempt\(s\) read back, not run again", err)
    assert read_back and int(read_back.group(1)) >= len(kept), err
    assert f"search run: {parent.info.run_id}" in out

    runs = attempt_runs(uri, parent.info.run_id)
    done = {int(r.data.tags["attempt.index"]): r for r in runs
            if r.info.status in ("FINISHED", "FAILED")}
    assert len(done) == len([r for r in runs if r.info.status in ("FINISHED", "FAILED")])
    assert kept <= {r.info.run_id for r in done.values()}  # kept, not run again
    expected = uninterrupted.run.attempts
    assert sorted(done) == [a.index for a in expected]
    for a in expected:
        run = done[a.index]
        assert run.data.params["trainer"] == a.candidate.trainer
        assert run.data.tags["verdict"] == a.status
        if a.status == "verified":
            assert run.data.metrics["cv_roc_auc"] == round(a.score, 4)
    assert client.get_run(parent.info.run_id).info.status == "FINISHED"
    assert {r.info.status for r in runs} <= {"FINISHED", "FAILED", "KILLED"}


# ---- an LLM search -------------------------------------------------------------------------------
LLM_ANSWERS = [
    {"trainer": "linear", "params": {"C": 0.3}, "rationale": "less regularised"},
    {"trainer": "random_forest", "params": {"n_estimators": 60, "max_depth": 8},
     "rationale": "shallower forest"},
    "no JSON here",  # an unusable answer is part of the history too: re-asked
    {"trainer": "linear", "params": {"C": 3.0, "class_weight": "balanced"},
     "rationale": "balanced classes"},
]


def model_server():
    """An OpenAI-compatible server whose n-th answer is fixed: it goes on where it left off."""
    from tests.fakes.openai_server import ScriptedOpenAI

    server = ScriptedOpenAI()
    server.responder = lambda body: ("answer", LLM_ANSWERS[(len(server.requests) - 1)
                                                           % len(LLM_ANSWERS)])
    return server


def llm_search(uri: str, csv: str, server, **kw):
    from mlflow_agentic.proposers.factory import LLMOptions

    return search(csv, tracking_uri=uri, register=False, diagnostics=False, proposer="llm",
                  llm=LLMOptions("scripted", server.base_url),
                  **{**SETTINGS, "max_iterations": 5, "patience": 5}, **kw)


def test_a_resumed_llm_search_answers_its_recorded_calls_from_traces_and_asks_only_new_ones(
        tmp_path, churn_csv):
    whole, cut = model_server(), model_server()
    try:
        expected = llm_search(f"sqlite:///{tmp_path / 'whole.db'}", churn_csv, whole)
        asked = len(whole.requests)
        assert len(expected.run.attempts) == 8 and asked == 6  # seeds 2, calls 5+1 re-ask, ensemble

        uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
        with pytest.raises(KeyboardInterrupt):
            llm_search(uri, churn_csv, cut, observers=[KillAfter(4)])
        before = len(cut.requests)
        assert 2 <= before < asked
        client = mlflow.MlflowClient(tracking_uri=uri)
        (parent,) = client.search_runs(["1"], "tags.`agentic.role` = 'search'")
        result = llm_search(uri, churn_csv, cut, resume=parent.info.run_id)
    finally:
        whole.close()
        cut.close()

    assert len(cut.requests) == asked  # no recorded call asked again, the new ones asked once
    assert cut.requests[before:] == whole.requests[before:]  # the same prompts as uninterrupted
    assert board(result) == board(expected)
    assert result.holdout.selected.holdout == pytest.approx(expected.holdout.selected.holdout,
                                                            abs=1e-12)
    traces = mlflow.MlflowClient(tracking_uri=uri).search_traces(
        locations=[parent.info.experiment_id], run_id=parent.info.run_id)
    assert len(traces) == asked  # each call traced once
    run = client.get_run(parent.info.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["llm_calls"] == asked
