"""What happens when things go wrong (the README's table): bad files and flags, a crash, Ctrl-C,
SIGTERM, kill -9, a tracking store that is down or stops mid-search, two searches at once.

Every case runs the real command (in-process or as a subprocess) against real files, a real
sqlite store or a real `mlflow server`; each asserts the message, the exit code, and what the
store holds afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mlflow_agentic.cli import main
from mlflow_agentic.data import Dataset
from tests.conftest import ROOT
from tests.servers import free_port, postgres, running_server

pytestmark = pytest.mark.slow  # signals, tracking-server outages, subprocess searches


@pytest.fixture(scope="module")
def frame(churn_frame) -> pd.DataFrame:
    return churn_frame.head(400).copy()


def write(tmp_path: Path, name: str, df: pd.DataFrame, **kw) -> Path:
    path = tmp_path / name
    df.to_csv(path, index=False, **kw)
    return path


def cli(*args):
    return CliRunner().invoke(main, [*map(str, args)])


def run_cli(*args):
    return cli("run", *args, "--quiet")


def registered():
    return mlflow.MlflowClient().search_registered_models()


# ---- bad input: exit 2, the value named, nothing logged ---------------------------------------
def numeric_target_with_text(p, df):
    df = df.assign(MonthlyCharges=df["MonthlyCharges"].astype(object))
    df.loc[17, "MonthlyCharges"] = "abc"
    return ["--data", write(p, "t.csv", df), "--target", "MonthlyCharges"]


def duplicate_columns(p, df):
    twice = pd.concat([df, df[["Churn"]]], axis=1)
    return ["--data", write(p, "d.csv", twice)]


def single_row_class(p, df):
    df = df.copy()
    df.loc[df.index[df.PaymentMethod == "Mailed check"][0], "PaymentMethod"] = "Cash"
    return ["--data", write(p, "c.csv", df), "--target", "PaymentMethod"]


def latin1_with_utf8_forced(p, df):
    df = df.assign(gender=df["gender"].replace("Female", "Fémale"))
    return ["--data", write(p, "l.csv", df, encoding="latin-1"), "--encoding", "utf-8"]


INPUT_CASES = {
    "numeric target with a text cell": (numeric_target_with_text,
                                        "target 'MonthlyCharges' is a number in 399 of 400 rows"),
    "ID-like target": (lambda p, df: ["--data", write(p, "i.csv", df), "--target",
                                      "customerID"],
                       "target 'customerID' has 400 distinct values in 400 rows"),
    "duplicate column names": (duplicate_columns, "column names appear more than once"),
    "a class with one row": (single_row_class, "class 'Cash' of target 'PaymentMethod' has a "
                                               "single row"),
    "the target as a post-outcome column": (
        lambda p, df: ["--data", write(p, "o.csv", df), "--post-outcome-columns", "Churn"],
        "'Churn' is the target, not a post-outcome column"),
    "a file that is not in the encoding given": (latin1_with_utf8_forced,
                                                 "'utf-8' codec can't decode"),
    "an unknown encoding": (lambda p, df: ["--data", write(p, "u.csv", df), "--encoding",
                                           "klingon"], "unknown encoding 'klingon'"),
    "a tracking server that is down": (
        lambda p, df: ["--data", write(p, "s.csv", df), "--tracking-uri",
                       f"http://127.0.0.1:{free_port()}"],
        "is not answering (connection refused)"),
    "an unwritable tracking store location": (
        lambda p, df: ["--data", write(p, "w.csv", df), "--tracking-uri",
                       f"sqlite:///{write(p, 'afile.csv', df)}/mlflow.db"],
        "cannot write the tracking store"),
    "an LLM endpoint that does not answer": (
        lambda p, df: ["--data", write(p, "e.csv", df), "--proposer", "llm", "--llm-base-url",
                       f"http://127.0.0.1:{free_port()}/v1"],
        "no answer from the LLM endpoint"),
}


@pytest.mark.parametrize("case", list(INPUT_CASES))
def test_bad_input_is_refused_with_the_value_named(case, tracking_uri, tmp_path, frame):
    make, fragment = INPUT_CASES[case]
    result = run_cli(*make(tmp_path, frame))
    assert result.exit_code == 2, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    assert registered() == [] and mlflow.search_runs(search_all_experiments=True).empty


def test_the_cv_advice_is_a_value_that_works(tmp_path, frame):
    from mlflow_agentic.frontdoor.orchestrator import seal

    dataset = Dataset.from_frame(frame)
    with pytest.raises(Exception, match=r"use --cv (\d+) or fewer") as error:
        seal(dataset, cv=10000)
    advised = int(error.value.args[0].split("use --cv ")[1].split()[0])
    assert advised > 2
    seal(dataset, cv=advised)  # the advice holds


def test_a_class_with_one_training_row_is_not_told_to_lower_cv(frame):
    from mlflow_agentic.engine.evaluate.cv import make_splits

    df = frame.copy()
    df.loc[df.index[df.PaymentMethod == "Mailed check"][0], "PaymentMethod"] = "Cash"
    dataset = Dataset.from_frame(df, "PaymentMethod")
    with pytest.raises(Exception, match="one row cannot be cross-validated at any --cv: drop "
                                        "or merge that class"):
        make_splits(dataset, 2, 0, "stratified")


@pytest.mark.parametrize("gap", ["nan", "-0.1", "inf"])
def test_promote_refuses_a_threshold_that_disables_the_gate(gap):
    result = cli("promote", "--model", "m", "--max-gap", gap)
    assert result.exit_code == 2 and "expected a finite number >= 0" in result.output


# ---- files read as users write them -------------------------------------------------------------
def test_a_latin1_file_and_a_semicolon_file_are_read_with_a_note(tmp_path, frame):
    accented = frame.assign(gender=frame["gender"].replace("Female", "Fémale"))
    latin = Dataset.from_path(write(tmp_path, "latin.csv", accented, encoding="latin-1"))
    assert "Fémale" in set(latin.frame["gender"])
    assert latin.notes[0].startswith("latin.csv is not UTF-8: read as ")
    semi = Dataset.from_path(write(tmp_path, "semi.csv", frame, sep=";"))
    assert list(semi.frame.columns) == list(frame.columns)
    assert semi.notes == ["semi.csv: columns separated by ';'"]
    forced = Dataset.from_path(tmp_path / "latin.csv", encoding="latin-1")
    assert forced.notes == [] and forced.frame.equals(latin.frame)


def test_a_numeric_target_with_blank_cells_is_a_regression_not_text(frame):
    """Telco's TotalCharges has blanks: missing targets (dropped), not text to refuse."""
    df = frame.copy()
    df.loc[:4, "TotalCharges"] = " "
    dataset = Dataset.from_frame(df, "TotalCharges")
    assert dataset.task == "regression" and dataset.n_rows == len(df) - 5
    assert dataset.notes == ["dropped 5 rows whose target 'TotalCharges' is missing"]


def test_infinite_values_are_read_as_missing_with_a_finding(frame):
    from mlflow_agentic.frontdoor.briefing import build_briefing

    df = frame.assign(tenure=frame["tenure"].astype(float))
    df.loc[:9, "tenure"] = np.inf
    dataset = Dataset.from_frame(df)
    assert dataset.frame["tenure"].isna().sum() == 10
    assert not np.isinf(dataset.frame["tenure"]).any()
    findings = build_briefing(dataset, cv=3).findings
    assert any(f.check == "data_read" and f.severity == "warning" and "'tenure': 10 infinite"
               in f.message for f in findings)


def test_a_search_whose_attempts_all_failed_says_so(tracking_uri, tmp_path, frame,
                                                    broken_trainer):
    result = run_cli("--data", write(tmp_path, "b.csv", frame), "--trainers", broken_trainer,
                     "--cv", "3", "--max-iterations", "0")
    assert result.exit_code == 0, result.output
    assert "every attempt failed (first error: RuntimeError: deliberately broken" in \
        result.output
    assert "beat the trivial baseline" not in result.output and registered() == []


# ---- a crash: the search run ends FAILED with the reason, exit 1 --------------------------------
def test_a_crash_after_the_search_started_ends_the_run_failed(tracking_uri, tmp_path, frame,
                                                              monkeypatch):
    import mlflow_agentic.frontdoor.orchestrator as search

    def crash(*args, **kwargs):
        raise KeyError("Cash")  # a fault where none is expected (it was once a real one)

    monkeypatch.setattr(search, "score_on_holdout", crash)
    result = run_cli("--data", write(tmp_path, "k.csv", frame), "--trainers", "linear",
                     "--cv", "3", "--max-iterations", "0")
    assert result.exit_code == 1, result.output
    assert "error: KeyError: 'Cash'" in result.output and "Traceback" not in result.output
    assert "the search run is marked FAILED with this reason" in result.output
    runs = mlflow.search_runs(search_all_experiments=True,
                              filter_string="tags.`agentic.role` = 'search'")
    assert runs["status"].tolist() == ["FAILED"]
    assert runs["tags.error"].tolist() == ["KeyError: 'Cash'"]
    assert registered() == []


def test_a_failing_observer_at_search_start_fails_the_run(tracking_uri, frame):
    from mlflow_agentic.engine import AgenticAutoML
    from mlflow_agentic.proposers import SequenceProposer
    from mlflow_agentic.tracking import MlflowTracker

    class Exploding:
        def on_search_start(self, context):
            raise RuntimeError("observer broke")

        def on_search_error(self, error):
            pass

    tracker = MlflowTracker()
    automl = AgenticAutoML(SequenceProposer(["linear"]), max_iterations=0, cv=3,
                           observers=[tracker, Exploding()])
    with pytest.raises(RuntimeError, match="observer broke"):
        automl.solve(Dataset.from_frame(frame))
    run = mlflow.get_run(tracker.parent_run_id)
    assert run.info.status == "FAILED" and run.data.tags["error"] == "RuntimeError: observer broke"


# ---- interrupts: the runs under way KILLED, what was kept said ----------------------------------
def start_search(tmp_path, uri, csv, *extra, env=None):
    command = [sys.executable, "-m", "mlflow_agentic", "run", "--data", str(csv), "--trainers",
               "linear,xgboost,random_forest", "--cv", "3", "--time-budget", "90", "--quiet",
               *extra]
    environment = {**os.environ, "MLFLOW_TRACKING_URI": uri, "PYTHONPATH": str(ROOT),
                   **(env or {})}
    # a foreground process: SIGINT raises KeyboardInterrupt even when the test runner itself
    # ignores SIGINT (a background job), which the child would inherit
    return subprocess.Popen(command, cwd=tmp_path, env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_finished_attempts(uri: str, n: int, proc, timeout: float = 120) -> None:
    from mlflow_agentic.tracking.store import check_store

    if uri.startswith("sqlite:"):  # created under the search's own lock, never racing it
        check_store(uri)
    client = mlflow.MlflowClient(tracking_uri=uri)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            runs = client.search_runs(
                [e.experiment_id for e in client.search_experiments()],
                "tags.`agentic.role` = 'attempt' and attributes.status = 'FINISHED'")
        except Exception:  # the store is being created
            runs = []
        if len(runs) >= n:
            return
        time.sleep(0.5)
    pytest.fail(f"no {n} finished attempts in {timeout:.0f}s")


def search_runs(uri: str) -> pd.DataFrame:
    mlflow.set_tracking_uri(uri)
    try:
        return mlflow.search_runs(search_all_experiments=True)
    finally:
        mlflow.set_tracking_uri(None)


@pytest.mark.parametrize(("sig", "code", "how"), [(signal.SIGINT, 130, "interrupted"),
                                                  (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_an_interrupt_marks_the_runs_killed_and_says_what_was_kept(tmp_path, churn_frame, sig,
                                                                   code, how):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = start_search(tmp_path, uri, write(tmp_path, "churn.csv", churn_frame))
    wait_for_finished_attempts(uri, 2, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert f"{how}: kept search run " in err and "Traceback" not in err
    runs = search_runs(uri)
    parent = runs[runs["tags.agentic.role"] == "search"]
    attempts = runs[runs["tags.agentic.role"] == "attempt"]
    assert parent["status"].tolist() == ["KILLED"]
    assert "RUNNING" not in set(attempts["status"])
    n_finished = int((attempts["status"] == "FINISHED").sum())
    assert f"with {n_finished} finished attempts" in err
    assert f"with {n_finished} finished attempts (1-{n_finished})" in \
        parent["tags.kept"].iloc[0]  # then, when one was under way: "attempt(s) 7 were cut"


def test_after_kill_9_a_new_search_marks_the_stale_runs_killed(tmp_path, churn_frame):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    csv = write(tmp_path, "churn.csv", churn_frame)
    proc = start_search(tmp_path, uri, csv)
    wait_for_finished_attempts(uri, 1, proc)
    proc.kill()
    proc.wait()
    stale = search_runs(uri)
    stale_id = stale.loc[stale["tags.agentic.role"] == "search", "run_id"].item()
    assert (stale["status"] == "RUNNING").any()
    again = start_search(tmp_path, uri, csv, "--max-iterations", "0", "--trainers", "linear")
    out, err = again.communicate(timeout=180)
    assert again.returncode == 0, err
    assert f"note: search run {stale_id} was left RUNNING (its process " in err
    runs = search_runs(uri)
    by_id = runs.set_index("run_id")
    assert by_id.loc[stale_id, "status"] == "KILLED"
    assert "RUNNING" not in set(runs["status"])


# ---- the tracking server stops mid-search -------------------------------------------------------
def mlflow_server(tmp_path: Path, port: int, store: str | None = None):
    command = [str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri",
               store or f"sqlite:///{tmp_path / 'server.db'}", "--artifacts-destination",
               str(tmp_path / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
               "--workers", "1"]
    return running_server(command, f"http://127.0.0.1:{port}/health",
                          tmp_path / f"server-{time.monotonic_ns()}.log", 120)


def traces_of(uri: str, experiment_id: str, run_id: str) -> list:
    """A run's traces on the server at ``uri``. Trace data sent late is stored at an
    ``mlflow-artifacts:`` URI, which MLflow resolves against the global tracking URI, not the
    client's: set it for the call."""
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        return mlflow.MlflowClient(uri).search_traces(locations=[experiment_id], run_id=run_id)
    finally:
        mlflow.set_tracking_uri(previous)


def test_a_tracking_server_that_comes_back_loses_nothing(tmp_path, churn_frame):
    """A tracking server backed by PostgreSQL stops for 8 s mid-search (an LLM search: its
    calls' traces too) and comes back."""
    from tests.test_resume import model_server

    port, llm = free_port(), model_server()
    uri = f"http://127.0.0.1:{port}"
    with postgres(("mlflow",)) as urls:
        with mlflow_server(tmp_path, port, urls["mlflow"]):
            proc = start_search(tmp_path, uri, write(tmp_path, "churn.csv", churn_frame),
                                "--max-iterations", "5", "--patience", "10", "--proposer",
                                "llm", "--llm-base-url", llm.base_url, "--llm-model", "scripted",
                                env={"MLFLOW_AGENTIC_TRACKING_RETRY_SECONDS": "120",
                                     "OPENAI_API_KEY": "k"})
            wait_for_finished_attempts(uri, 1, proc)
        time.sleep(8)  # down (and while it restarts): the search retries with backoff
        with mlflow_server(tmp_path, port, urls["mlflow"]):
            out, err = proc.communicate(timeout=240)
            llm.close()
            assert proc.returncode == 0, err
            assert f"tracking store {uri} is not answering" in err
            # said by the call that got through, or (a busy machine: the outage met the end
            # of the search) by the delivery of what waited in the journal
            assert ("is answering again; the search goes on" in err
                    or re.search(r"sent \d+ (journaled )?record\(s\) of search run", err)), err
            runs = search_runs(uri)
            parent = runs[runs["tags.agentic.role"] == "search"]
            traces = traces_of(uri, parent["experiment_id"].iloc[0],
                               parent["run_id"].iloc[0])
    assert "made while the tracking store was down" in err  # some calls were
    calls = sorted(int(t.data.spans[0].attributes["call"]) for t in traces)
    assert calls == list(range(1, len(llm.requests) + 1))  # every call's trace, each once
    attempts = runs[runs["tags.agentic.role"] == "attempt"]
    assert parent["status"].tolist() == ["FINISHED"]
    indices = attempts["tags.attempt.index"].astype(int).tolist()
    assert sorted(indices) == list(range(1, len(indices) + 1))  # each once, none lost
    assert len(indices) == int(parent["metrics.n_attempts"].iloc[0])
    assert "registered: models:/churn-agentic@challenger" in out


def test_a_server_down_past_the_search_leaves_a_journal_that_flush_sends_once(
        tmp_path, churn_frame, journal_dir):
    """The server stops after the first attempt and stays down: the search (an LLM search: its
    calls' traces too) goes on, ends with its records journaled; the server comes back,
    ``flush`` sends them (once, even twice run), and the printed command finishes the search
    without running an attempt again or asking the LLM again."""
    from tests.test_resume import model_server

    port, llm = free_port(), model_server()
    uri = f"http://127.0.0.1:{port}"
    csv = write(tmp_path, "churn.csv", churn_frame)
    with mlflow_server(tmp_path, port):
        proc = start_search(tmp_path, uri, csv, "--max-iterations", "4", "--patience", "10",
                            "--proposer", "llm", "--llm-base-url", llm.base_url,
                            "--llm-model", "scripted",
                            env={"MLFLOW_AGENTIC_TRACKING_RETRY_SECONDS": "4",
                                 "OPENAI_API_KEY": "k"})
        wait_for_finished_attempts(uri, 1, proc)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 1, err
    assert "the search goes on; its records wait in the journal" in err
    assert f"error: the tracking store {uri} did not answer for 4s after the search ended" in err
    assert "Traceback" not in err
    (journal,) = journal_dir.glob("*.jsonl")
    assert f"mlflow-agentic flush {journal}" in err
    refs = {json.loads(line).get("ref") for line in journal.read_text().splitlines()} - {None}
    n_attempts = len({r for r in refs if r.startswith("attempt:")})
    asked = len(llm.requests)
    journaled = sorted(int(r.split(":")[1]) for r in refs if r.startswith("call:"))
    # the calls made once the server was down wait too (a call made in the instant between the
    # first attempt's end and the server's stop reached the store: seen once under CI's load)
    assert journaled and journaled == list(range(journaled[0], asked + 1)), (journaled, asked)

    cli = [sys.executable, "-m", "mlflow_agentic"]
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "PYTHONPATH": str(ROOT),
           "OPENAI_API_KEY": "k"}
    with mlflow_server(tmp_path, port):
        sent = subprocess.run([*cli, "flush", str(journal)], env=env, capture_output=True,
                              text=True, timeout=120)
        assert sent.returncode == 0, sent.stderr
        assert "sent " in sent.stdout and not journal.exists()
        again = subprocess.run([*cli, "flush"], env=env, capture_output=True, text=True,
                               timeout=60)
        assert "nothing to send" in again.stdout
        runs = search_runs(uri)
        attempts = runs[runs["tags.agentic.role"] == "attempt"]
        indices = sorted(attempts["tags.attempt.index"].astype(int))
        assert indices == list(range(1, n_attempts + 1))  # each once, none lost
        resume = sent.stderr.split("finish it (nothing finished runs again): ")[1]
        resume = resume.splitlines()[0].strip()
        assert resume.startswith("mlflow-agentic run --data ") and "--resume " in resume
        done = subprocess.run([*cli, *shlex.split(resume)[1:]], env=env, capture_output=True,
                              text=True, timeout=240, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"{len(indices)} finished attempt(s) read back" in done.stderr
        assert f"{asked} LLM call(s) answered from their traces" in done.stderr
        assert len(llm.requests) == asked  # none asked again
        runs = search_runs(uri)
        traces = traces_of(uri, runs["experiment_id"].iloc[0], resume.split()[-1])
    llm.close()
    assert sorted(int(t.data.spans[0].attributes["call"]) for t in traces) == \
        list(range(1, asked + 1))  # each call's trace once
    parent = runs[runs["tags.agentic.role"] == "search"]
    attempts = runs[runs["tags.agentic.role"] == "attempt"]
    assert parent["status"].tolist() == ["FINISHED"]
    assert sorted(attempts["tags.attempt.index"].astype(int)) == \
        list(range(1, int(parent["metrics.n_attempts"].iloc[0]) + 1))  # each once


# ---- two searches at once on a new store --------------------------------------------------------
def test_two_first_searches_at_once_on_a_fresh_store_both_succeed(tmp_path, frame):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    csv = write(tmp_path, "churn.csv", frame)
    procs = [start_search(tmp_path, uri, csv, "--max-iterations", "0", "--trainers", trainer,
                          "--register", "always")  # both versioned: the alias race is the point
             for trainer in ("linear", "random_forest")]
    results = [p.communicate(timeout=240) for p in procs]
    for _, err in results:
        print(err)  # shown whole when the test fails (an assertion message is cut)
    assert [p.returncode for p in procs] == [0, 0]
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    versions = client.search_model_versions("name = 'churn-agentic'")
    assert len(versions) == 2
    scores = {v.version: float(v.tags["holdout_roc_auc"]) for v in versions}
    assert len({v.tags["holdout_digest"] for v in versions}) == 1  # the same evidence
    holder = client.get_model_version_by_alias("churn-agentic", "challenger")
    assert float(holder.tags["holdout_roc_auc"]) == max(scores.values())  # in any order
    outs = "".join(out for out, _ in results)
    if holder.version != max(scores, key=lambda v: int(v)):  # the later, worse one said so
        assert f"@challenger stays on version {holder.version}: it scores better" in outs
