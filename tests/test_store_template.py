"""A new sqlite store is a copy of a cached empty one (``tracking.store.template``): MLflow's
migrations run once per machine and MLflow version, every copy is a store of its own."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import mlflow
import pytest

from mlflow_agentic.tracking.store import template
from mlflow_agentic.tracking.store.check import check_store

MIGRATING = "Creating initial MLflow database tables"
"""What MLflow logs when it migrates a new store from nothing."""


class Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def said():
    handler, logger = Said(), logging.getLogger("mlflow.store.db.utils")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.lines
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(template.CACHE_ENV, str(folder))
    return folder


def new_store(folder: Path, monkeypatch) -> str:
    folder.mkdir()
    monkeypatch.chdir(folder)  # MLflow's default artifact root is ./mlruns of the working dir
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    check_store(uri)
    return uri


def test_the_first_new_store_is_migrated_and_the_next_is_a_copy_of_its_own(
        tmp_path, cache, said, monkeypatch):
    first = new_store(tmp_path / "a", monkeypatch)
    assert any(MIGRATING in line for line in said)
    kept = template.template_path()
    assert kept is not None and kept.parent == cache and template._is_empty_store(kept)
    said.clear()

    second = new_store(tmp_path / "b", monkeypatch)
    assert not any(MIGRATING in line for line in said), said  # copied, not migrated
    client = mlflow.MlflowClient(tracking_uri=second)
    default = client.get_experiment("0")  # MLflow's own, made for this store when opened
    assert default.artifact_location == str(tmp_path / "b" / "mlruns" / "0")
    run = client.create_run(client.create_experiment("x"))  # a working store (through this
    client.log_metric(run.info.run_id, "m", 1.0)  # client: fluent calls follow the global URI)
    client.set_terminated(run.info.run_id)
    assert [e.name for e in client.search_experiments()] == ["x", "Default"]
    first_client = mlflow.MlflowClient(tracking_uri=first)
    assert [e.name for e in first_client.search_experiments()] == ["Default"]  # untouched
    assert first_client.get_experiment("0").artifact_location == str(
        tmp_path / "a" / "mlruns" / "0")
    modes = {(tmp_path / d / "mlflow.db").stat().st_mode for d in "ab"}
    assert len(modes) == 1  # a copy is made with the umask's mode, as sqlite makes a file
    assert not list((tmp_path / "b").glob(".*.part"))


def test_a_broken_or_stale_empty_store_is_replaced_and_the_store_still_made(
        tmp_path, cache, said, monkeypatch):
    new_store(tmp_path / "a", monkeypatch)
    kept = template.template_path()
    assert kept is not None
    valid = kept.read_bytes()

    kept.write_bytes(b"not a database")  # cut short, or another program's file
    uri = new_store(tmp_path / "b", monkeypatch)
    assert mlflow.MlflowClient(tracking_uri=uri).get_experiment("0").name == "Default"
    assert template._is_empty_store(kept)  # made again from the migrated store

    kept.write_bytes(valid)  # a schema this MLflow would not open: not copied
    with sqlite3.connect(kept) as db:
        db.execute("UPDATE alembic_version SET version_num = '000000000000'")
    said.clear()
    uri = new_store(tmp_path / "c", monkeypatch)
    assert any(MIGRATING in line for line in said)  # made by the migrations after all
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert client.get_experiment("0").artifact_location == str(tmp_path / "c" / "mlruns" / "0")
    with sqlite3.connect(kept) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchone()[0] != \
            "000000000000"


def test_an_empty_cache_setting_turns_the_copy_off(tmp_path, monkeypatch, said):
    monkeypatch.setenv(template.CACHE_ENV, "")
    new_store(tmp_path / "a", monkeypatch)
    said.clear()
    new_store(tmp_path / "b", monkeypatch)
    assert any(MIGRATING in line for line in said)
    assert template.template_path() is None
