"""Cluster backends: a seeded search gives the same leaderboard on a Dask LocalCluster and a
local Ray cluster as with local processes (results are recorded in proposal order)."""

from __future__ import annotations

import pytest

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.engine.workers.backends import shutdown_clusters
from mlflow_agentic.frontdoor.api import search
from tests.servers import system_temp

pytestmark = pytest.mark.slow  # Dask and Ray clusters

SETTINGS = dict(trainers=["linear", "random_forest"], cv=3, seed=3, max_iterations=4,
                patience=3, n_jobs=2, register=False, diagnostics=False)


def board(result) -> list[tuple]:
    return [(a.index, a.candidate.trainer, dict(a.params), a.status, a.score)
            for a in result.run.attempts]


@pytest.fixture(scope="module")
def local(tmp_path_factory, churn_small):
    uri = f"sqlite:///{tmp_path_factory.mktemp('local') / 'mlflow.db'}"
    return search(churn_small, tracking_uri=uri, **SETTINGS)


@pytest.mark.parametrize("backend", ["dask", "ray"])
def test_a_cluster_backend_gives_the_local_leaderboard(tmp_path, churn_small, local, backend,
                                                     monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with system_temp("ray") as short:  # Ray's socket paths must fit in 107 bytes
        monkeypatch.setenv("RAY_TMPDIR", str(short))
        try:
            result = search(churn_small, tracking_uri=uri, backend=backend, **SETTINGS)
        finally:
            shutdown_clusters()  # the rest of the suite keeps its cores
    assert board(result) == board(local)
    assert result.holdout.selected.holdout == pytest.approx(local.holdout.selected.holdout,
                                                            abs=1e-12)
    import mlflow

    run = mlflow.MlflowClient(tracking_uri=uri).get_run(result.run_id)
    assert run.data.params["backend"] == backend


def test_an_unknown_backend_or_scheduler_is_refused(tmp_path, churn_small, monkeypatch):
    from mlflow_agentic.engine.workers import backends

    monkeypatch.setattr(backends, "DASK_CONNECT_SECONDS", 2)  # nothing listens on port 1
    with pytest.raises(UserInputError, match="backend 'spark': expected local, dask or ray"):
        search(churn_small, tracking_uri=f"sqlite:///{tmp_path / 'a.db'}", backend="spark",
               **SETTINGS)
    with pytest.raises(UserInputError, match="cannot reach the Dask scheduler"):
        search(churn_small, tracking_uri=f"sqlite:///{tmp_path / 'b.db'}", backend="dask",
               backend_address="tcp://127.0.0.1:1", **SETTINGS)
