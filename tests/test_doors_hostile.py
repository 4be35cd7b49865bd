"""The doors attacked as a hostile or careless user would, each refused before anything is done,
with what was wrong and exit 2: a mistyped store (no empty store made), an output that is the
input or cannot be written (checked before any row is predicted), a port another server holds, a
stale ``MLFLOW_RUN_ID``, prices and sandbox sizes that would make a cap or a limit meaningless."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from mlflow_agentic.cli import main
from mlflow_agentic.core.errors import UserInputError


def cli(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env)


@pytest.mark.parametrize("command", [["leaderboard"], ["predict", "m", "--data", "x.csv"],
                                     ["promote", "--model", "m", "--dry-run"], ["ui"]])
def test_a_mistyped_store_is_refused_and_not_created(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'typo' / 'mlfow.db'}"
    result = cli(*command, "--tracking-uri", uri)
    assert result.exit_code == 2, result.output
    assert f"no tracking store at {uri}" in result.output
    assert not (tmp_path / "typo").exists() and list(tmp_path.iterdir()) == []


def test_predict_refuses_to_overwrite_its_input_or_write_nowhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "rows.csv"
    data.write_text("a,b\n1,2\n")
    same = cli("predict", "m", "--data", str(data), "-o", str(data))
    assert same.exit_code == 2 and "is the --data file" in same.output
    assert data.read_text() == "a,b\n1,2\n"
    nowhere = cli("predict", "m", "--data", str(data), "-o", str(tmp_path / "no" / "p.csv"))
    assert nowhere.exit_code == 2 and "does not exist" in nowhere.output
    folder = cli("predict", "m", "--data", str(data), "-o", str(tmp_path))
    assert folder.exit_code == 2 and "is a folder" in folder.output


def test_ui_refuses_a_port_another_server_holds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # as an earlier test may leave it
    (tmp_path / "mlflow.db").touch()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = cli("ui", "--port", str(port), "--no-browser")
    assert result.exit_code == 2, result.output
    assert f"port {port} on 127.0.0.1 is taken" in result.output


def test_a_stale_mlflow_run_id_is_refused(tmp_path, monkeypatch, churn_frame):
    import mlflow

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    old = client.create_run(client.create_experiment("earlier")).info.run_id
    client.set_terminated(old, "FINISHED")
    data = tmp_path / "churn.csv"
    churn_frame.head(100).to_csv(data, index=False)
    result = cli("run", "--data", str(data), "--tracking-uri", uri, "--max-iterations", "1",
                 env={"MLFLOW_RUN_ID": old})
    assert result.exit_code == 2, result.output
    assert f"MLFLOW_RUN_ID={old} names a run that is FINISHED" in result.output
    assert client.get_run(old).info.status == "FINISHED"
    assert client.search_runs([e.experiment_id for e in client.search_experiments()],
                              max_results=10)[0].info.run_id == old  # nothing new


@pytest.mark.parametrize("prices, words", [
    ("{not json", "is not JSON"), ('["gpt"]', "got list"),
    ('{"m": [-1, 2]}', "the price of 'm' is [-1, 2]"), ('{"m": [NaN, 1]}', "[nan, 1]"),
    ('{"m": [1]}', "the price of 'm' is [1]")])
def test_prices_that_would_let_a_cap_never_bind_are_refused(monkeypatch, prices, words):
    from mlflow_agentic.llm.pricing import price_table

    monkeypatch.setenv("MLFLOW_AGENTIC_LLM_PRICES", prices)
    with pytest.raises(UserInputError, match="MLFLOW_AGENTIC_LLM_PRICES") as caught:
        price_table()
    assert words in str(caught.value)


@pytest.mark.parametrize("limits, words", [
    ({"memory": "1e400g"}, "expected a size"), ({"memory": "99999999999999999999g"},
                                                "more than this machine's"),
    ({"timeout": float("inf")}, "expected a positive number"), ({"cpus": 4096}, "CPUs")])
def test_sandbox_limits_a_container_could_never_have_are_refused(limits, words):
    from mlflow_agentic.sandbox import Limits

    with pytest.raises(UserInputError, match=words):
        Limits(**limits)


def test_a_deleted_experiments_name_is_refused_with_how_to_restore_it(tmp_path, monkeypatch,
                                                                      churn_frame):
    import mlflow

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    gone = client.create_experiment("gone")
    client.delete_experiment(gone)
    data = tmp_path / "churn.csv"
    churn_frame.head(100).to_csv(data, index=False)
    result = cli("run", "--data", str(data), "--tracking-uri", uri, "--experiment", "gone",
                 "--max-iterations", "1")
    assert result.exit_code == 2, result.output
    assert f"experiment 'gone' (id {gone}) is deleted" in result.output
    assert f"mlflow experiments restore --experiment-id {gone}" in result.output
    assert "Traceback" not in result.output
