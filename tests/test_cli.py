"""The command line: a run end to end, and bad input that fails clearly and registers nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import mlflow
import pytest
from click.testing import CliRunner

from mlflow_agentic.cli import main
from tests.conftest import ROOT


@pytest.fixture
def small_csv(tmp_path, churn_frame):
    path = tmp_path / "churn.csv"
    churn_frame.head(300).to_csv(path, index=False)
    return path


def invoke(*args):
    return CliRunner().invoke(main, ["run", *map(str, args), "--quiet"])


def registered_models():
    return mlflow.MlflowClient().search_registered_models()


@pytest.mark.slow
def test_cli_run_end_to_end_in_a_subprocess(tracking_uri, small_csv, broken_plugin_dir):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(broken_plugin_dir), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "mlflow_agentic", "run", "--data", str(small_csv),
         "--proposer", "sequence", "--trainers", "linear,broken,hist_gradient_boosting",
         "--cv", "3", "--patience", "5"],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # the two verified attempts, then their ensemble (a fourth, engine-made candidate)
    assert "Agentic AutoML: 4 attempts (3 verified); best=" in proc.stdout
    assert "registered: models:/churn-agentic@challenger (version 1)" in proc.stdout
    assert "holdout (60 rows, stratified): selected" in proc.stdout
    assert "deliberately broken trainer" in proc.stderr  # the progress line shows the failure
    assert "warning: trainer broken failed in all 1 of its attempt(s): " in proc.stderr
    mv = mlflow.MlflowClient().get_model_version_by_alias("churn-agentic", "challenger")
    assert mv.tags["trainer"] in ("linear", "hist_gradient_boosting", "ensemble")


@pytest.mark.slow
def test_candidates_file_for_the_sequence_proposer(tracking_uri, small_csv, tmp_path):
    path = tmp_path / "cands.json"
    path.write_text(json.dumps([{"trainer": "linear", "params": {"C": 0.1}},
                                {"trainer": "xgboost", "params": {"max_depth": 3}}]))
    result = invoke("--data", small_csv, "--proposer", "sequence", "--candidates", path,
                    "--cv", "3", "--register-name", "my-model", "--experiment", "exp-a")
    assert result.exit_code == 0, result.output
    runs = mlflow.search_runs(experiment_names=["exp-a"], filter_string="params.trainer='xgboost'")
    assert runs["params.max_depth"].tolist() == ["3"]
    assert mlflow.MlflowClient().get_model_version_by_alias("my-model", "challenger")


def bad(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


CASES = {
    "missing file": (lambda p, ok: ["--data", p / "nope.csv"], "data file not found"),
    "empty file": (lambda p, ok: ["--data", bad(p, "e.csv", "")], "data file is empty"),
    "unreadable file": (lambda p, ok: ["--data", bad(p, "x.parquet", "junk")], "cannot read"),
    "unknown target": (lambda p, ok: ["--data", ok, "--target", "churn_flag"],
                       "target column 'churn_flag' not found"),
    "one class": (lambda p, ok: ["--data", bad(p, "o.csv", "a,target\n1,x\n2,x\n3,x\n")],
                  "single class 'x'"),
    "target all missing": (lambda p, ok: ["--data", bad(p, "m.csv", "a,target\n1,\n2,\n")],
                           "missing in all 2 rows"),
    "fewer rows than folds": (lambda p, ok: ["--data", bad(p, "f.csv",
                                                         "a,target\n1,x\n2,y\n3,x\n4,y\n")],
                              "fewer than cv=5 folds"),
    "unknown trainer": (lambda p, ok: ["--data", ok, "--trainers", "linear,xgbost"],
                        "unknown trainer 'xgbost'"),
    "unknown metric": (lambda p, ok: ["--data", ok, "--metric", "auc"], "unknown metric 'auc'"),
    "metric for another task": (lambda p, ok: ["--data", ok, "--metric", "rmse"],
                                "metric 'rmse' does not fit a binary task"),
    "unparseable params": (lambda p, ok: ["--data", ok, "--proposer", "sequence", "--candidates",
                                          bad(p, "c.json", '[{"trainer": "xgboost", "params": '
                                              '{"max_depth": "deep"}}]')],
                           "candidate 1: bad value for xgboost.max_depth"),
    "unknown time column": (lambda p, ok: ["--data", ok, "--time-column", "when"],
                            "unknown time column 'when'"),
    "time column that does not parse": (lambda p, ok: ["--data", ok, "--time-column", "gender"],
                                        "time column 'gender' does not parse as dates"),
    "too few groups": (lambda p, ok: ["--data", ok, "--group-column", "gender"],
                       "has 2 groups; at least 4"),
    "holdout fraction out of range": (lambda p, ok: ["--data", ok, "--holdout-fraction", "0.7"],
                                      "holdout fraction must be in (0, 0.5], got 0.7"),
    "unknown post-outcome column": (lambda p, ok: ["--data", ok, "--post-outcome-columns",
                                                   "Refund"],
                                    "unknown post-outcome column(s) 'Refund'"),
    "params not JSON": (lambda p, ok: ["--data", ok, "--proposer", "sequence", "--candidates",
                                       bad(p, "c.json", "[{trainer: xgboost}]")],
                        "is not valid JSON"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.slow
def test_bad_input_fails_clearly_and_registers_nothing(case, tracking_uri, tmp_path, small_csv):
    make, fragment = CASES[case]
    result = invoke(*make(tmp_path, small_csv))
    assert result.exit_code == 2, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    assert registered_models() == []


FIRST = {
    "register name with a slash": (["--register-name", "a/b"],
                                   "--register-name 'a/b': a registered model's name cannot "
                                   "contain '/' or ':'"),
    "register name with a colon": (["--register-name", "churn:v1"], "e.g. --register-name "
                                   "churn-v1"),
    "experiment name too long": (["--experiment", "x" * 501],
                                 "--experiment is 501 characters; MLflow allows at most 500"),
    "trainers that name nothing": (["--trainers", ","], "',' names nothing"),
    "data given as a URL": (["--data", "http://example.com/churn.csv"],
                            "data 'http://example.com/churn.csv' is a URL"),
}


@pytest.mark.parametrize("case", list(FIRST))
def test_what_can_be_checked_first_is_checked_before_any_run(case, tracking_uri, small_csv):
    """Refused with exit 2 before the first fit: no experiment, no run, nothing registered."""
    args, fragment = FIRST[case]
    data = [] if "--data" in args else ["--data", small_csv]
    result = invoke(*data, *args)
    assert result.exit_code == 2, result.output
    assert fragment in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output
    client = mlflow.MlflowClient()
    assert [r for e in client.search_experiments() for r in
            client.search_runs([e.experiment_id])] == []
    assert registered_models() == []


def test_help_lists_the_options():
    result = CliRunner().invoke(main, ["run", "--help"])
    for option in ("--data", "--target", "--proposer", "--trainers", "--max-iterations",
                   "--patience", "--cv", "--metric", "--register-name", "--experiment", "--seed"):
        assert option in result.output


@pytest.mark.slow
def test_the_quickstart_runs_the_honest_search(tracking_uri, tmp_path):
    """examples/quickstart.py uses the front door: sealed holdout, gap, registration."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                          capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "holdout (1409 rows, stratified): selected" in proc.stdout
    assert "registered: models:/churn-agentic version 1 (@challenger -> version 1)" in \
        proc.stdout
    mv = mlflow.MlflowClient().get_model_version_by_alias("churn-agentic", "challenger")
    assert mv.tags["holdout_digest"] and mv.tags["verdict.status"] == "verified"


@pytest.mark.slow
def test_task_regression_reads_whole_number_scores_as_numbers(tracking_uri, tmp_path,
                                                             churn_frame):
    """A target of a few whole values (a 0-5 score) is read as classes unless --task says."""
    frame = churn_frame.drop(columns=["Churn"]).head(300).copy()
    frame["score"] = (frame["tenure"] // 15).clip(0, 5)
    data = tmp_path / "scores.csv"
    frame.to_csv(data, index=False)
    common = ["--data", data, "--target", "score", "--max-attempts", "2", "--trainers",
              "linear", "--no-register"]
    inferred = invoke(*common)
    assert inferred.exit_code == 0, inferred.output
    assert "roc_auc_ovr=" in inferred.output or "log_loss=" in inferred.output
    told = invoke(*common, "--task", "regression")
    assert told.exit_code == 0, told.output
    assert "rmse=" in told.output


@pytest.mark.search
@pytest.mark.slow  # over ~3 s
def test_the_served_line_says_which_rows_and_is_absent_when_nothing_is_served(tracking_uri,
                                                                              small_csv):
    """By default the served model is refit on every labelled row, and the command says so; a
    search that served nothing (its budget spent before the loop) says nothing of a model."""
    served = invoke("--data", small_csv, "--trainers", "linear", "--max-iterations", "1")
    assert served.exit_code == 0, served.output
    assert "served: refit on all 300 labelled rows (training + holdout)" in served.output
    nothing = invoke("--data", small_csv, "--time-budget", "3")
    assert nothing.exit_code == 0, nothing.output
    assert "nothing verified" in nothing.output and "served:" not in nothing.output


def test_serve_local_says_when_its_server_dies_at_the_first_completion(monkeypatch):
    """A llama.cpp server that lists its model and then traps on an illegal instruction: the
    command exits 1 with the server's last lines and how to build for this CPU, never 'ready'."""
    import sys
    from pathlib import Path

    from click.testing import CliRunner

    from mlflow_agentic.cli import main
    from mlflow_agentic.llm import local
    from tests.servers import free_port

    port = free_port()
    fake = Path(__file__).parent / "fakes" / "dying_llm.py"
    monkeypatch.setattr(local, "server_command",
                        lambda host, p, threads: [sys.executable, str(fake), str(port)])
    result = CliRunner().invoke(main, ["llm", "serve-local", "--port", str(port)])
    assert result.exit_code == 1, result.output
    assert "died at its first completion (exit code -4)" in result.stderr
    assert "running an instruction this CPU lacks" in result.stderr
    assert "CMAKE_ARGS" in result.stderr and "serving smollm2" not in result.stderr


def test_each_step_outside_the_loop_is_said_on_a_terminal():
    import io

    from rich.console import Console

    from mlflow_agentic.cli.progress import RichProgress

    out = io.StringIO()
    progress = RichProgress(Console(file=out, force_terminal=True, width=100), started=0.0)
    progress.on_phase("sealing the holdout, briefing the training rows")
    assert "sealing the holdout, briefing the training rows ..." in out.getvalue()
    piped = io.StringIO()
    RichProgress(Console(file=piped, force_terminal=False)).on_phase("recording")
    assert piped.getvalue() == ""
