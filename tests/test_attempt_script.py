"""Every attempt as code: each attempt run holds ``attempt.py``, which rebuilds that attempt from
the file the search read and reproduces its recorded CV score to 4 decimals; the selected
ensemble's script rebuilds the model the holdout scored and the registered model. Run here as a
user runs them, one per trainer, against a real search in a sqlite store."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import joblib
import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_agentic import SequenceProposer, SolutionCandidate
from mlflow_agentic.core import evidence as ev
from mlflow_agentic.data import Dataset
from mlflow_agentic.trainers import trainer_registry

NAME = "churn-scripts"


@pytest.fixture(scope="module")
def scripted_search(tmp_path_factory, churn_frame):
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    root = tmp_path_factory.mktemp("scripts")
    csv = root / "churn.csv"
    churn_frame.to_csv(csv, index=False)
    trainers = [n for n, t in trainer_registry().items() if not t.on_request]
    uri = f"sqlite:///{root / 'mlflow.db'}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        tracker = MlflowTracker(experiment="scripts", register_name=NAME, register="always")
        run_search(Dataset.from_path(csv, "Churn"),
                   lambda: SequenceProposer([SolutionCandidate(n, {}) for n in trainers]),
                   max_iterations=len(trainers), patience=len(trainers), cv=3, seed=0,
                   tracker=tracker)
    finally:
        mlflow.set_tracking_uri(previous)
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.get_experiment_by_name("scripts").experiment_id
    runs = client.search_runs([experiment], "tags.`agentic.role` = 'attempt'")
    return uri, client, csv, {r.data.tags["trainer"]: r for r in runs}, trainers


def rerun(client, run, csv, workdir, capsys):
    """``python attempt.py DATA`` in ``workdir`` (beside the search's folds.csv), in this
    process: its printed lines and its globals."""
    folder = workdir / run.info.run_id
    folder.mkdir(exist_ok=True)
    path = client.download_artifacts(run.info.run_id, "attempt.py", str(folder))
    client.download_artifacts(run.data.tags["mlflow.parentRunId"], "folds.csv", str(folder))
    argv = sys.argv
    sys.argv = [path, str(csv)]
    try:
        found = runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = argv
    return capsys.readouterr().out, found


@pytest.mark.parametrize("trainer", [n for n, t in trainer_registry().items()
                                     if not t.on_request])
@pytest.mark.slow
def test_each_attempts_script_reproduces_its_recorded_cv_score(scripted_search, trainer,
                                                               tmp_path, capsys):
    uri, client, csv, runs, _ = scripted_search
    run = runs[trainer]
    out, found = rerun(client, run, csv, tmp_path, capsys)
    recorded = run.data.metrics["cv_roc_auc"]
    assert f"CV roc_auc {recorded:.4f} over 3 folds (recorded: roc_auc {recorded:.4f})" in out
    saved = joblib.load(tmp_path / run.info.run_id / "model.joblib")
    rows = found["prepare"](found["labelled"].head(3))
    assert found["output"](saved, rows).shape == (3, 2)


@pytest.mark.slow
def test_the_selected_ensembles_script_rebuilds_the_registered_model(scripted_search,
                                                                     churn_frame, tmp_path,
                                                                     capsys):
    """Its ``model`` is the model the holdout scored (logged as the holdout's evidence);
    ``fit(X_all, y_all)`` is the registered one, the recipe refit on every labelled row. It
    prints the nested CV the search recorded."""
    uri, client, csv, runs, trainers = scripted_search
    version = client.get_model_version(NAME, "1")
    selected = client.get_run(version.run_id)
    assert selected.data.tags["trainer"] == "ensemble", "precondition: an ensemble won"
    out, found = rerun(client, selected, csv, tmp_path, capsys)
    assert out.count("member ") == len(selected.data.params["members"].split(","))
    assert f"nested CV roc_auc {selected.data.metrics['cv_roc_auc']:.4f}" in out
    assert selected.data.params[ev.SERVED_ROWS] == str(len(found["X_all"])) == "800"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        registered = mlflow.pyfunc.load_model(f"models:/{NAME}/1")
        scored = mlflow.pyfunc.load_model(selected.data.params[ev.EVIDENCE_MODEL_URI])
    finally:
        mlflow.set_tracking_uri(previous)
    X = churn_frame.drop(columns=["Churn"]).head(50)
    rows = found["prepare"](X)
    for models, logged in ((found["model"], scored),
                           (found["fit"](found["X_all"], found["y_all"]), registered)):
        served = logged.predict(X, params={"output": "probabilities"})
        probabilities = served[[c for c in served.columns if c.startswith("probability_")]]
        np.testing.assert_allclose(found["combined"](models, rows),
                                   probabilities.to_numpy(float), atol=1e-6)


@pytest.mark.slow
def test_the_scripts_run_where_mlflow_agentic_is_not_installed(scripted_search, tmp_path):
    """Each trainer's script in a fresh virtual environment that sees the libraries (pandas,
    scikit-learn, the boosters) but not mlflow-agentic, run from a folder outside the project:
    plain code, the recorded CV printed."""
    import subprocess
    import sysconfig

    uri, client, csv, runs, trainers = scripted_search
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    # the libraries' folder, without its .pth files (the editable install of this project)
    (Path(site.stdout.strip()) / "libraries.pth").write_text(sysconfig.get_paths()["purelib"])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    absent = subprocess.run([str(python), "-c", "import mlflow_agentic"], cwd=tmp_path,
                            env=env, capture_output=True, text=True)
    assert absent.returncode != 0 and "No module named 'mlflow_agentic'" in absent.stderr
    for trainer in trainers:
        run = runs[trainer]
        folder = tmp_path / trainer
        folder.mkdir()
        client.download_artifacts(run.info.run_id, "attempt.py", str(folder))
        client.download_artifacts(run.data.tags["mlflow.parentRunId"], "folds.csv",
                                  str(folder))
        done = subprocess.run([str(python), "attempt.py", str(csv)], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        recorded = run.data.metrics["cv_roc_auc"]
        assert f"CV roc_auc {recorded:.4f} over 3 folds" in done.stdout, (trainer, done.stdout)
        assert (folder / "model.joblib").stat().st_size > 0
        lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated",
                               "--line-length", "100", "--select", "E,F,W,I", "attempt.py"],
                              cwd=folder, capture_output=True, text=True)
        assert lint.returncode == 0, (trainer, lint.stdout)


def test_a_crafted_file_name_cannot_run_as_code_in_the_script():
    """A data file named with a docstring's quotes and ``__import__``: the name stays text."""
    import ast

    from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, Verdict
    from mlflow_agentic.engine.after.script import attempt_script

    name = 'x"""; __import__("os").system("touch pwned"); """.csv'
    record = AttemptRecord(SolutionCandidate("linear", {}), 0.8, Verdict(True, "ok", 0.8),
                           index=1, metric="roc_auc", params={"C": 1.0})
    recipe = {"source": f"/data/{name}", "target": "y", "task": "binary", "split": {},
              "cv": 3, "cv_scheme": "stratified", "keep_flagged_columns": False,
              "large_rows": 0}
    recipe["rows"] = {"training": list(range(40)), "holdout": [40, 41]}
    frame = pd.DataFrame({"x": [i % 7 for i in range(40)], "y": [0, 1] * 20})
    train = Dataset.from_frame(frame, "y")
    script = attempt_script(record, train, recipe, {}, search="abc", n_splits=3, seed=0)
    tree = ast.parse(script)
    calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name)]
    assert "__import__" not in calls
    assert ast.get_docstring(tree).count("__import__") == 1  # said, in the docstring
    assert repr(f"/data/{name}") in script  # the code names the file by its repr


def _kinds_frame(task: str, n: int = 300) -> pd.DataFrame:
    """Every kind of column a script must type as the search did: numbers with gaps and text
    numbers, a date, a category of 30 levels (target encoded) and one of 4 with gaps."""
    rng = np.random.default_rng(1)
    signal = rng.normal(size=n)
    frame = pd.DataFrame({
        "amount": np.where(rng.random(n) < 0.1, np.nan, signal + rng.normal(0, 0.5, n)),
        "count": [f" {v} " for v in rng.integers(0, 9, n)],
        "opened": pd.date_range("2020-01-01", periods=n, freq="3D").strftime("%Y-%m-%d"),
        "shop": [f"s{v}" for v in rng.integers(0, 30, n)],
        "colour": rng.choice(["red", "green", "blue", None], n),
    })
    frame["y"] = (signal * 3 + rng.normal(size=n) if task == "regression"
                  else np.digitize(signal, [-0.5, 0.5]).astype(str))
    return frame


@pytest.mark.slow
@pytest.mark.parametrize("task, metric", [("regression", "rmse"), ("multiclass", "roc_auc_ovr")])
def test_scripts_type_dates_codes_and_gaps_as_the_search_did(tmp_path, task, metric, capsys):
    """A regression and a three-class task with dates, text numbers, gaps and a 30-level
    category: each trainer's script prints its recorded CV to 4 decimals, and is lint-clean."""
    import subprocess

    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    csv = tmp_path / f"{task}.csv"
    _kinds_frame(task).to_csv(csv, index=False)
    trainers = ["linear", "random_forest", "lightgbm", "xgboost", "catboost"]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        run_search(Dataset.from_path(csv, "y"),
                   lambda: SequenceProposer([SolutionCandidate(n, {}) for n in trainers]),
                   max_iterations=len(trainers), patience=len(trainers), cv=3, seed=0,
                   tracker=MlflowTracker(experiment=task, register="never"))
    finally:
        mlflow.set_tracking_uri(previous)
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(task).experiment_id
    runs = client.search_runs([experiment], "tags.`agentic.role` = 'attempt'")
    checked = 0
    for run in runs:
        if run.data.tags["trainer"] not in trainers:
            continue
        out, _ = rerun(client, run, csv, tmp_path, capsys)
        recorded = run.data.metrics[f"cv_{metric}"]
        assert f"CV {metric} {recorded:.4f} over 3 folds" in out, (run.data.tags["trainer"], out)
        lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated",
                               "--line-length", "100", "--select", "E,F,W,I",
                               str(tmp_path / run.info.run_id / "attempt.py")],
                              capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout
        checked += 1
    assert checked == len(trainers)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stack", "ensemble"])
def test_a_combined_scripts_arithmetic_is_the_served_models(churn_frame, tmp_path, kind,
                                                            capsys):
    """A stack's or an ensemble's script, written without a search (seal, folds.csv, the
    script), combines its members as ``StackedEnsemble`` / ``WeightedEnsemble`` serve them."""
    from mlflow_agentic.core.types import AttemptRecord, Verdict
    from mlflow_agentic.engine.after.script import attempt_script, folds_csv
    from mlflow_agentic.frontdoor.orchestrator import seal
    from mlflow_agentic.trainers.stacked import StackedEnsemble
    from mlflow_agentic.trainers.transforms import WeightedEnsemble

    csv = tmp_path / "churn.csv"
    churn_frame.to_csv(csv, index=False)
    task = seal(Dataset.from_path(csv, "Churn"), cv=3, random_state=0)
    train, recipe = task.briefing.dataset, task.briefing.recipe
    (tmp_path / "folds.csv").write_text(folds_csv(train, recipe, 3, 0, task.briefing.cv_scheme))
    members = {1: ("linear", {}), 2: ("hist_gradient_boosting", {})}
    params = ({"members": [1, 2], "coef": [[0.7, 1.3]], "intercept": [-0.2]} if kind == "stack"
              else {"members": [1, 2], "weights": [0.25, 0.75]})
    record = AttemptRecord(SolutionCandidate(kind, {}), 0.8321, Verdict(True, "ok", 0.8),
                           index=3, metric="roc_auc", params=params)
    script = attempt_script(record, train, recipe, members, search="abc", n_splits=3, seed=0)
    path = tmp_path / "attempt.py"
    path.write_text(script)
    argv, sys.argv = sys.argv, [str(path), str(csv)]
    try:
        found = runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv = argv
    out = capsys.readouterr().out
    assert "nested CV roc_auc 0.8321, as the search recorded it" in out
    assert out.count("member ") == 2
    fitted, rows = found["model"], found["prepare"](churn_frame.head(40))
    served = (StackedEnsemble(fitted, params["coef"], params["intercept"], ("No", "Yes"),
                              "binary") if kind == "stack"
              else WeightedEnsemble(fitted, params["weights"], ("No", "Yes")))
    np.testing.assert_allclose(found["combined"](fitted, rows), served.predict_proba(rows),
                               atol=1e-12)
