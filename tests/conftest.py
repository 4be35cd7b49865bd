"""Shared fixtures: real MLflow sqlite stores under tmp_path, small real datasets, and a
deliberately broken trainer installed through the real entry-point group."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_agentic.data import Dataset
from mlflow_agentic.tracking.store.template import CACHE_ENV
from mlflow_agentic.trainers import trainer_registry

ROOT = Path(__file__).resolve().parents[1]
CHURN = ROOT / "examples" / "churn.csv"


SYSTEM_TMP = "MLFLOW_AGENTIC_TEST_SYSTEM_TMP"
"""Where a folder another user must reach goes (PostgreSQL's, run as ``postgres``): pytest's
tree is private to the user running the tests."""


@pytest.fixture(scope="session", autouse=True)
def private_tempdir(tmp_path_factory):
    """Temporary files of the code under test and of its child processes (MLflow's artifact
    copies, sandbox folders, spills) go under pytest's own tree, which pytest prunes, so a
    test run leaves nothing in /tmp (``SYSTEM_TMP`` names the system's temp folder)."""
    folder = str(tmp_path_factory.mktemp("tempfile"))
    previous = os.environ.get("TMPDIR")
    os.environ.setdefault(SYSTEM_TMP, tempfile.gettempdir())  # for other users' folders
    os.environ["TMPDIR"], tempfile.tempdir = folder, folder
    # the empty store new sqlite stores are copied from (tracking.store.template): one per
    # test process, under pytest's tree, never the user's ~/.cache
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("cache"))
    yield folder
    os.environ.pop(CACHE_ENV, None)
    tempfile.tempdir = None
    if previous is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = previous


@pytest.fixture(scope="session")
def churn_frame() -> pd.DataFrame:
    """800 rows of the real Telco churn file (stratified sample), raw as read."""
    df = pd.read_csv(CHURN)
    parts = [g.sample(frac=800 / len(df), random_state=0) for _, g in df.groupby("Churn")]
    return pd.concat(parts).sample(frac=1.0, random_state=0).reset_index(drop=True)


@pytest.fixture(scope="session")
def job_parts(churn_frame):
    """A sandbox job's parts: 500 churn rows' features, labels, and three folds."""
    train = churn_frame.iloc[:500]
    features = train.drop(columns=["Churn", "customerID"])
    y = (train["Churn"] == "Yes").astype(int).to_numpy()
    return features, y, np.arange(len(train)) % 3


@pytest.fixture(scope="session")
def churn_small(churn_frame) -> Dataset:
    return Dataset.from_frame(churn_frame, name="churn")


def scripted_frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Binary task with one informative column ``signal`` and one pure-noise column ``noise``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pd.DataFrame({"signal": y + rng.normal(0, 1.0, n), "noise": rng.normal(0, 1, n),
                         "target": y})


SERVICE_FIXTURES = {"docker_sandbox"}
"""A test that asks for one of these is in the slow tier, whatever its module says: the fast
tier (``pytest -m "not slow"``) runs with no Docker, PostgreSQL, LLM or server."""


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def docker_sandbox():
    """The real Docker daemon and sandbox image (.ci/start-docker.sh); missing fails in CI."""
    import os

    from mlflow_agentic.sandbox import DockerSandbox, Limits, SandboxUnavailable

    try:
        return DockerSandbox(limits=Limits(memory="512m", cpus=1, timeout=60)).check()
    except SandboxUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI starts dockerd and builds the image: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(autouse=True)
def journal_dir(tmp_path, monkeypatch) -> Path:
    """Searches keep their journals under tmp_path (``tracking.store.journal``), never in the
    repository."""
    path = tmp_path / "journal"
    monkeypatch.setenv("MLFLOW_AGENTIC_JOURNAL_DIR", str(path))
    return path


@pytest.fixture
def tracking_uri(tmp_path, monkeypatch) -> str:
    """A fresh sqlite MLflow store (tracking + registry) under tmp_path, set as the default."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    for var in ("MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_RUN_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(uri)
    mlflow.tracing.reset()  # the tracer exports to the store current when it was set up
    yield uri
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(None)
    mlflow.tracing.reset()


BROKEN_PLUGIN = textwrap.dedent('''
    """A trainer package whose model always raises inside fit (for failure-path tests)."""
    from sklearn.base import BaseEstimator, ClassifierMixin
    from mlflow_agentic.trainers import Trainer


    class ExplodingClassifier(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            raise RuntimeError("deliberately broken trainer: fit always raises")


    TRAINER = Trainer(
        "broken",
        build_model=lambda task, params, seed: ExplodingClassifier(),
        space=lambda dataset: {},
        defaults=lambda dataset: {},
        tasks=frozenset({"binary", "multiclass"}),
        description="always fails",
    )
''')


@pytest.fixture(scope="session")
def broken_plugin_dir(tmp_path_factory) -> Path:
    """A directory holding an installed-style distribution with a ``mlflow_agentic.trainers``
    entry point; put it on sys.path or PYTHONPATH to install it."""
    return fake_distribution(tmp_path_factory.mktemp("site"), "broken_trainer_plugin",
                             BROKEN_PLUGIN,
                             "[mlflow_agentic.trainers]\nbroken = broken_trainer_plugin:TRAINER\n")


def fake_distribution(site: Path, module: str, source: str, entry_points: str) -> Path:
    """An installed-style distribution (module + dist-info with entry points) in ``site``;
    put ``site`` on sys.path or PYTHONPATH to install it."""
    (site / f"{module}.py").write_text(source)
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    name = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return site


@pytest.fixture
def broken_trainer(broken_plugin_dir):
    """The broken trainer, discovered through importlib.metadata entry points."""
    sys.path.insert(0, str(broken_plugin_dir))
    trainer_registry(refresh=True)
    yield "broken"
    sys.path.remove(str(broken_plugin_dir))
    sys.modules.pop("broken_trainer_plugin", None)
    trainer_registry(refresh=True)


class TrackedSearch:
    """A finished search recorded in a real sqlite store, shared by the tests that read it."""

    def __init__(self, uri, run, tracker, dataset):
        self.uri, self.run, self.tracker, self.dataset = uri, run, tracker, dataset
        self.client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)


@pytest.fixture(scope="session")
def tracked_search(tmp_path_factory, churn_small) -> TrackedSearch:
    from mlflow_agentic import OptunaProposer, run_search
    from mlflow_agentic.tracking import MlflowTracker

    root = tmp_path_factory.mktemp("tracked")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        tracker = MlflowTracker()
        result = run_search(churn_small, lambda: OptunaProposer(seed=0), max_iterations=3,
                            patience=5, cv=3, trainers=["linear", "xgboost", "random_forest"],
                            tracker=tracker, prune=False, ensemble=False)
    finally:
        mlflow.set_tracking_uri(previous)
    return TrackedSearch(uri, result.run, tracker, result.briefing.dataset)


class RegisteredSearch:
    """A finished honest search (sealed holdout, gap) whose best model is registered."""

    def __init__(self, uri, result, tracker, name):
        self.uri, self.result, self.tracker, self.name = uri, result, tracker, name
        self.client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)


def registered_search(uri: str, dataset, name: str, candidates, seed: int = 0,
                      register: str = "better", **settings):
    """Search ``dataset`` with a fixed candidate list and register the best as ``name``
    (``register``: the registry policy; ``settings``: other search settings)."""
    from mlflow_agentic import SequenceProposer
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        tracker = MlflowTracker(experiment=f"{name}-searches", register_name=name,
                                register=register)
        result = run_search(dataset, lambda: SequenceProposer(candidates), max_iterations=5,
                            patience=5, cv=3, seed=seed, tracker=tracker, **settings)
    finally:
        mlflow.set_tracking_uri(previous)
    return RegisteredSearch(uri, result, tracker, name)


def promote_cli(uri: str, model: str, *args: str):
    """``mlflow-agentic promote --model MODEL ARGS`` through click against the store ``uri``;
    the process-wide tracking URI the command sets is put back afterwards."""
    from click.testing import CliRunner

    from mlflow_agentic.cli import main

    previous = mlflow.get_tracking_uri()
    try:
        return CliRunner().invoke(main, ["promote", "--model", model, "--tracking-uri", uri,
                                         *args], catch_exceptions=False)
    finally:
        mlflow.set_tracking_uri(previous)


def predicted_without_package(tracking_uri: str, model_uri: str, X: pd.DataFrame) -> list:
    """What ``model_uri`` predicts on ``X`` in a fresh Python where mlflow_agentic cannot be
    imported: a registered model must load and serve without our package."""
    script = ("import sys, io; sys.modules['mlflow_agentic'] = None\n"  # not importable
              "import mlflow, pandas as pd\n"
              f"m = mlflow.pyfunc.load_model({model_uri!r})\n"
              "print(list(m.predict(pd.read_csv(io.StringIO(sys.stdin.read())))))")
    proc = subprocess.run([sys.executable, "-c", script], input=X.to_csv(index=False),
                          capture_output=True, text=True, timeout=180, cwd=ROOT.parent,
                          env={**os.environ, "MLFLOW_TRACKING_URI": tracking_uri})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return eval(proc.stdout.strip().splitlines()[-1])  # noqa: S307 - our own output


TIER_MARKS = ("slow", "search")
"""A test without one of these is in the unit tier and must not run a search."""

_RUNNING: list[pytest.Item] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Note which test is running (its setup included), for the unit tier's guard."""
    _RUNNING.append(item)
    try:
        return (yield)
    finally:
        _RUNNING.pop()


def _guard_the_unit_tier() -> None:
    """``AgenticAutoML.solve`` fails in a unit test (no ``slow`` or ``search`` mark), so the unit
    tier stays a tier of tests that run no search, whatever a later change adds to it."""
    from mlflow_agentic.engine.search.loop import AgenticAutoML

    solve = AgenticAutoML.solve

    @functools.wraps(solve)
    def guarded(self, *args, **kwargs):
        item = _RUNNING[-1] if _RUNNING else None
        if item is not None and not any(item.get_closest_marker(m) for m in TIER_MARKS):
            raise AssertionError(f"{item.nodeid} runs a search but is in the unit tier: mark "
                                 "it pytest.mark.search (or build what it tests directly)")
        return solve(self, *args, **kwargs)

    AgenticAutoML.solve = guarded


_guard_the_unit_tier()
