"""Isolation of the holdout, by construction and in what MLflow records; the post-outcome leak
acceptance; quarantine; the trap benchmark."""

from __future__ import annotations

import inspect
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_agentic import Dataset, OptunaProposer, SequenceProposer
from mlflow_agentic.engine import AgenticAutoML, SearchObserver
from mlflow_agentic.frontdoor.orchestrator import SplitOptions, run_search
from mlflow_agentic.tracking import MlflowTracker
from tests.imports import runtime_imports

PACKAGE = Path(__file__).resolve().parents[1] / "mlflow_agentic"


# ---- isolation by construction -----------------------------------------------------------------
def test_no_holdout_parameter_reachable_from_the_loop():
    solve = inspect.signature(AgenticAutoML.solve)
    assert list(solve.parameters) == ["self", "dataset"]
    init = inspect.signature(AgenticAutoML.__init__)
    for name in init.parameters:
        assert "holdout" not in name and "test" not in name and "split" not in name
    for proposer in (OptunaProposer, SequenceProposer):
        for method in ("propose_initial", "propose_next"):
            params = inspect.signature(getattr(proposer, method)).parameters
            assert not any("holdout" in p for p in params)


def _closure(start: str) -> set[str]:
    """Every mlflow_agentic module reachable by imports from ``start`` (transitively)."""
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module in seen or not module.startswith("mlflow_agentic"):
            continue
        seen.add(module)
        rel = module.removeprefix("mlflow_agentic").strip(".").replace(".", "/")
        path = PACKAGE / (rel + ".py") if (PACKAGE / (rel + ".py")).exists() else \
            PACKAGE / rel / "__init__.py"
        if path.exists():
            todo += [m for m in runtime_imports(path) if m.startswith("mlflow_agentic")]
            parent = module.rsplit(".", 1)[0]
            if parent != module:
                todo.append(parent)
    return seen


@pytest.mark.parametrize("start", ["mlflow_agentic.engine.search.loop", "mlflow_agentic.proposers",
                                   "mlflow_agentic.proposers.optuna",
                                   "mlflow_agentic.proposers.sequence",
                                   "mlflow_agentic.frontdoor.briefing"])
def test_loop_and_proposers_never_import_the_scorer(start):
    reached = _closure(start)
    assert start in reached
    assert not any(m.startswith("mlflow_agentic.scoring") for m in reached), reached
    assert not any(m.startswith("mlflow_agentic.frontdoor.orchestrator") for m in reached)


@pytest.mark.search
def test_proposer_is_built_only_after_the_holdout_is_sealed(churn_small):
    events = []

    def make():
        events.append("proposer built")
        return SequenceProposer(["linear"])

    import mlflow_agentic.frontdoor.orchestrator as search_module

    original = search_module.seal_holdout

    def sealing(*args, **kwargs):
        events.append("sealed")
        return original(*args, **kwargs)

    search_module.seal_holdout = sealing
    try:
        run_search(churn_small, make, cv=3, max_iterations=0)
    finally:
        search_module.seal_holdout = original
    assert events == ["sealed", "proposer built"]


# ---- isolation in what is recorded -------------------------------------------------------------
class Snapshot(SearchObserver):
    """At the end of the loop (before any holdout scoring), read back everything recorded."""

    def __init__(self, tracker):
        self.tracker = tracker
        self.text = ""

    def on_search_end(self, run):
        client = mlflow.MlflowClient()
        ids = [self.tracker.parent_run_id, *self.tracker.child_run_ids.values()]
        chunks = []
        for run_id in ids:
            data = client.get_run(run_id)
            chunks += [repr(data.data.params), repr(data.data.tags),
                       repr(data.data.metrics), repr(data.inputs)]
            if not client.list_artifacts(run_id):
                continue
            local = mlflow.artifacts.download_artifacts(run_id=run_id)
            for path in Path(local).rglob("*"):
                if path.is_file():
                    chunks.append(path.read_bytes().decode("utf-8", "replace"))
        self.text = "\n".join(chunks)


@pytest.mark.search
def test_holdout_targets_appear_in_no_record_written_before_scoring(tracking_uri):
    rng = np.random.default_rng(7)
    n = 300
    x = rng.normal(size=n)
    y = np.round(50 + 10 * x + rng.normal(0, 6, n) + rng.random(n) * 1e-3, 6)
    df = pd.DataFrame({"x": x, "z": rng.normal(size=n), "cat": rng.choice(list("pq"), n),
                       "value": y})
    ds = Dataset.from_frame(df, "value", name="unique-targets")
    tracker = MlflowTracker()
    snapshot = Snapshot(tracker)
    result = run_search(ds, lambda: SequenceProposer(["linear", "hist_gradient_boosting"]),
                        cv=3, patience=5, tracker=tracker, observers=[snapshot])
    from mlflow_agentic.data.split import seal_holdout

    _, holdout = seal_holdout(ds)
    held = holdout.dataset.y.to_numpy()
    assert result.holdout.n_rows == len(held) == 60
    assert snapshot.text and "hist_gradient_boosting" in snapshot.text
    train_values = set(np.round(result.briefing.dataset.y.to_numpy(), 6))
    leaked = [v for v in held if v not in train_values and
              any(f"{v:.{d}f}" in snapshot.text for d in (4, 5, 6))]
    assert leaked == []
    # the holdout scores themselves are only written after scoring
    assert f"{result.holdout.selected.holdout:.6f}"[:8] not in snapshot.text


@pytest.mark.search
def test_every_prompt_fact_is_recomputed_from_the_training_rows(churn_frame):
    """The LLM's task facts (rows, per-column distinct values and missing rates, class shares,
    excluded columns) recomputed here with plain pandas from the training rows the search was
    given: any number taken on the whole file (holdout rows included) fails."""
    import json

    from mlflow_agentic.proposers.llm import LLMProposer
    from tests.fakes.openai_server import ScriptedOpenAI

    frame = churn_frame.copy()
    frame.loc[frame.index[:40], "MonthlyCharges"] = np.inf  # counted in a read note
    server = ScriptedOpenAI(script=[("answer", {"trainer": "linear", "params": {"C": 0.5},
                                                "rationale": "r"})])
    try:
        result = run_search(Dataset.from_frame(frame, "Churn", name="churn"),
                            lambda: LLMProposer(model="scripted", base_url=server.base_url,
                                                api_key="k", backoff=0.01),
                            cv=3, max_iterations=1, trainers=["linear"], ensemble=False)
        user = server.requests[0]["messages"][1]["content"]
    finally:
        server.close()
    facts = json.loads(user.split("Task facts:\n", 1)[1].split("\n\n", 1)[0])
    train = result.briefing.dataset
    rows = train.frame
    assert facts["rows"] == len(rows) == result.train_rows < len(frame)
    assert set(facts["columns"]) == set(train.columns)
    for column, fact in facts["columns"].items():
        values = rows[column]
        assert fact["distinct"] == values.dropna().nunique(), column
        assert fact["missing_rate"] == round(float(values.isna().mean()), 3), column
    shares = sorted((round(float(v), 3) for v in rows[train.target].value_counts(
        normalize=True)), reverse=True)
    assert facts["class_shares"] == shares
    assert facts["excluded_columns"] == ["customerID"]  # what the search really excluded
    # the whole file would have said otherwise (the check can fail)
    assert facts["columns"]["customerID"]["distinct"] < frame["customerID"].nunique()
    n_inf = int(rows["MonthlyCharges"].isna().sum())  # the column had no other gap
    assert 0 < n_inf < 40
    assert [n for n in train.notes if "infinite" in n] == [
        f"column 'MonthlyCharges': {n_inf} infinite values read as missing"]


# ---- acceptance 4: a planted post-outcome leak ---------------------------------------------------
@pytest.fixture(scope="module")
def leak_search(tmp_path_factory, churn_frame):
    root = tmp_path_factory.mktemp("leak")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    rng = np.random.default_rng(0)
    df = churn_frame.copy()
    churned = df["Churn"].eq("Yes").to_numpy()
    df["RefundIssued"] = np.where(churned ^ (rng.random(len(df)) < 0.01), "yes", "no")
    mlflow.set_tracking_uri(uri)
    try:
        tracker = MlflowTracker(register_name="leaky-churn")
        result = run_search(
            Dataset.from_frame(df, "Churn", name="leaky"),
            lambda: SequenceProposer(["linear", "xgboost"]), cv=3, patience=5,
            split=SplitOptions(post_outcome_columns=["RefundIssued"]), tracker=tracker)
    finally:
        mlflow.set_tracking_uri(None)
    return uri, result, tracker, df


@pytest.mark.slow
def test_planted_leak_is_flagged_critical_and_excluded(leak_search):
    uri, result, tracker, df = leak_search
    finding = [f for f in result.briefing.findings if f.column == "RefundIssued"]
    assert finding and finding[0].severity == "critical" and finding[0].action == "excluded"
    assert "RefundIssued" in result.briefing.excluded
    client = mlflow.MlflowClient(uri)
    parent = client.get_run(tracker.parent_run_id)
    # every column the model does not read, each with its reason
    assert parent.data.tags["excluded_columns"] == "customerID,RefundIssued"
    assert parent.data.params["excluded_columns"] == "customerID,RefundIssued"
    assert "RefundIssued" in parent.data.tags["excluded.RefundIssued"]  # the finding says why
    assert parent.data.tags["finding.single_feature.RefundIssued"].startswith("critical:")


@pytest.mark.search
def test_registered_model_does_not_use_the_leak(leak_search):
    uri, result, tracker, df = leak_search
    mlflow.set_tracking_uri(uri)
    try:
        served = mlflow.pyfunc.load_model("models:/leaky-churn@challenger")
        model = served.unwrap_python_model().model  # the fitted pipeline behind the pyfunc
    finally:
        mlflow.set_tracking_uri(None)
    pipelines = getattr(model, "estimators", [model])  # an ensemble: each member
    for pipeline in pipelines:
        used = {c for name, step, cols in pipeline.named_steps["preprocess"].transformers_
                if step != "drop" for c in (cols if isinstance(cols, list) else [])}
        assert "RefundIssued" not in used and "tenure" in used
    X = df.drop(columns=["Churn"]).head(100)
    flipped = X.assign(RefundIssued=np.where(X["RefundIssued"] == "yes", "no", "yes"))
    assert np.allclose(model.predict_proba(X), model.predict_proba(flipped))


@pytest.mark.search
def test_holdout_scores_and_gap_are_recorded(leak_search):
    uri, result, tracker, _ = leak_search
    client = mlflow.MlflowClient(uri)
    sel = result.holdout.selected
    assert abs(sel.gap) < 0.1 and not sel.self_deceived
    for index, run_id in tracker.child_run_ids.items():
        child = client.get_run(run_id)
        score = result.holdout.scores[index]
        assert child.data.metrics["holdout_roc_auc"] == round(score.holdout, 4)
        assert child.data.metrics["gap"] == pytest.approx(score.cv - score.holdout, abs=5e-5)
        assert child.data.tags["self_deceived"] in ("true", "false")
    parent = client.get_run(tracker.parent_run_id)
    assert parent.data.metrics["holdout_roc_auc"] == round(sel.holdout, 4)
    assert parent.data.metrics["gap"] == round(sel.gap, 4)
    artifacts = {a.path for a in client.list_artifacts(tracker.parent_run_id)}
    assert {"cv_vs_holdout.png", "findings.json", "briefing.json", "leaderboard.csv"} <= artifacts
    mv = client.get_model_version_by_alias("leaky-churn", "challenger")
    assert float(mv.tags["holdout_roc_auc"]) == round(sel.holdout, 4)
    assert float(mv.tags["gap"]) == round(sel.gap, 4)
    assert mv.tags["excluded_columns"] == "customerID,RefundIssued"  # all the model ignores


# ---- quarantine --------------------------------------------------------------------------------
@pytest.mark.search
def test_too_good_candidates_are_quarantined_and_never_registered(tracking_uri, churn_frame):
    df = churn_frame.assign(Leak=churn_frame["Churn"])
    tracker = MlflowTracker()
    result = run_search(Dataset.from_frame(df, "Churn", name="too-good"),
                        lambda: SequenceProposer(["linear", "xgboost"]), cv=3, patience=5,
                        keep_flagged_columns=True, tracker=tracker)
    assert [a.status for a in result.run.attempts] == ["quarantined", "quarantined"]
    assert "too good to be true" in result.run.attempts[0].verdict.reason
    assert result.run.model is None
    assert mlflow.MlflowClient().search_registered_models() == []
    child = mlflow.MlflowClient().get_run(tracker.child_run_ids[1])
    assert child.data.tags["verdict"] == "quarantined"


# ---- acceptance 1: the trap benchmark ---------------------------------------------------------
@pytest.mark.slow
def test_trap_benchmark_default_seed(tracking_uri):
    from mlflow_agentic.bench.traps import run_bench

    rows = {r.task: r for r in run_bench(seed=0)}
    traps = [r for r in rows.values() if r.task != "control"]
    assert all(r.caught for r in traps), [r.task for r in traps if not r.caught]
    assert rows["control"].false_flags == []
    assert sum(r.naive_fell for r in traps) >= 4
    runs = mlflow.search_runs(experiment_names=["bench-traps"],
                              filter_string="tags.bench = 'traps'")
    assert len(runs) == 6
