"""`mlflow-agentic compare` end to end on a real sqlite store: all four proposers (the LLM one over
real HTTP to a scripted OpenAI-compatible server, then replayed), the report recomputed from the
runs, the same table on a re-run, shared splits and budget, and bad input refused up front."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner

from mlflow_agentic.cli import main
from mlflow_agentic.compare.table import DETERMINISTIC, aggregate, rank
from tests.conftest import scripted_frame
from tests.fakes.openai_server import ScriptedOpenAI

PROPOSERS = ["llm", "optuna", "sequence", "random"]
SEEDS = [1, 2]
BUDGET = 5
TRAINERS = "linear,hist_gradient_boosting"


def llm_answer(body: dict) -> tuple:
    """A deterministic 'LLM': the answer depends only on how many attempts the prompt lists."""
    n = body["messages"][-1]["content"].count("hist_gradient_boosting")
    return ("answer", {"trainer": "hist_gradient_boosting",
                       "params": {"max_iter": 40 + 10 * n, "learning_rate": 0.05},
                       "rationale": "more, slower boosting", "expected_score": 0.99})


def compare_args(data, uri, *extra):
    return ["compare", "--data", str(data), "--proposers", ",".join(PROPOSERS),
            "--budget-iterations", str(BUDGET), "--seeds", ",".join(map(str, SEEDS)),
            "--trainers", TRAINERS, "--cv", "3", "--tracking-uri", uri, "--quiet", *extra]


class Comparison:
    def __init__(self, uri, output, result):
        self.uri, self.output, self.result = uri, output, result
        self.client = mlflow.MlflowClient(tracking_uri=uri)
        self.id = next(line.split()[2] for line in result.output.splitlines()
                       if line.startswith("comparison id:"))
        self.report = json.loads((output / "churn" / "comparison.json").read_text())

    def runs(self, filter_string: str):
        ids = [e.experiment_id for e in self.client.search_experiments()]
        return self.client.search_runs(ids, filter_string=filter_string, max_results=1000)

    def arms(self):
        return self.runs(f"tags.`agentic.comparison_id` = '{self.id}' and "
                         "tags.`agentic.role` = 'search'")

    def children(self, run_id):
        return self.runs(f"tags.mlflow.parentRunId = '{run_id}'")


def load_table(uri, experiment_id, artifact_file, run_id):
    """``MlflowClient.load_table`` searches runs through the global tracking URI (MLflow 3.17),
    so point it at this store for the call."""
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        return mlflow.MlflowClient(uri).load_table(experiment_id, artifact_file, [run_id])
    finally:
        mlflow.set_tracking_uri(previous)


def _isolated_cli(args, tmp, monkeypatch):
    for var in ("MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_RUN_ID",
                "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp)
    previous = mlflow.get_tracking_uri()
    try:
        return CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        mlflow.set_tracking_uri(previous)
        mlflow.tracing.reset()


@pytest.fixture(scope="module")
def comparisons(tmp_path_factory, churn_frame):
    """The same comparison twice on one store: first against the scripted LLM server, then with
    the LLM replayed from the first (the server closed)."""
    tmp = tmp_path_factory.mktemp("compare")
    data = tmp / "churn.csv"
    churn_frame.to_csv(data, index=False)
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    server = ScriptedOpenAI(responder=llm_answer)
    out = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "k")
        try:
            first = _isolated_cli(compare_args(data, uri, "--llm-base-url", server.base_url,
                                               "--llm-model", "scripted", "--output",
                                               str(tmp / "first")), tmp, mp)
        finally:
            server.close()
        assert first.exit_code == 0, first.output
        out.append(Comparison(uri, tmp / "first", first))
        # the process's MLflow points elsewhere (as after other tests): --tracking-uri must win,
        # also when the earlier comparison is read back for --llm-replay
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(f"sqlite:///{tmp / 'elsewhere.db'}")
        try:
            again = _isolated_cli(compare_args(data, uri, "--llm-replay", out[0].id, "--output",
                                               str(tmp / "again")), tmp, mp)
        finally:
            mlflow.set_tracking_uri(previous)
        assert again.exit_code == 0, again.output
        out.append(Comparison(uri, tmp / "again", again))
    out[0].requests = server.requests
    return out


@pytest.mark.slow
def test_every_proposer_and_seed_is_a_tagged_search_run(comparisons):
    first = comparisons[0]
    arms = first.arms()
    assert sorted((a.data.tags["proposer"], int(a.data.tags["agentic.seed"])) for a in arms) == \
        sorted((p, s) for p in PROPOSERS for s in SEEDS)
    comparison_run = first.client.get_run(first.report["arms"][0]["run_id"])
    parent = comparison_run.data.tags["mlflow.parentRunId"]
    assert all(a.data.tags["mlflow.parentRunId"] == parent for a in arms)
    assert first.client.get_run(parent).data.tags["agentic.role"] == "comparison"
    assert f"browse it:  mlflow-agentic ui --run {parent}" in first.result.output  # its page,
    # as run prints its search's (with --tracking-uri unless the store is ./mlflow.db)
    llm_arms = [a for a in arms if a.data.tags["proposer"] == "llm"]
    assert all(a.data.metrics["llm_calls"] == BUDGET - 2 for a in llm_arms)
    assert len(first.requests) == len(SEEDS) * (BUDGET - 2)
    assert [r["seed"] for r in first.requests[:1]] == [SEEDS[0]]  # the seed reaches the server


@pytest.mark.slow
def test_arms_share_the_split_folds_and_budget(comparisons):
    arms = comparisons[0].arms()
    assert len({a.data.tags["holdout"] for a in arms}) == 1  # one sealed holdout (digest)
    client = comparisons[0].client
    folds = {tuple(round(m.value, 12) for m in client.get_metric_history(a.info.run_id,
                                                                      "baseline_roc_auc_fold"))
             for a in arms}
    assert len(folds) == 1  # the same fold indices: the same baseline fold scores
    for arm in arms:
        n = len(comparisons[0].children(arm.info.run_id))
        expected = 2 if arm.data.tags["proposer"] == "sequence" else BUDGET
        assert n == int(arm.data.metrics["n_attempts"]) == expected
        assert arm.data.params["patience"] == "off"
        assert arm.data.params["budget_attempts"] == str(BUDGET)


def _recompute_arm(cmp: Comparison, arm) -> dict:
    children = cmp.children(arm.info.run_id)
    verified = [c for c in children if c.data.tags["verdict"] == "verified"]
    def exact_cv(c) -> float:  # the runs table rounds to 4 decimals; the folds keep them all
        return statistics.fmean(m.value for m in cmp.client.get_metric_history(
            c.info.run_id, "cv_roc_auc_fold"))

    best = max(verified, key=lambda c: (exact_cv(c), -int(c.data.tags["attempt.index"])))
    assert best.info.run_id == arm.data.tags["selected_run_id"]
    m = arm.data.metrics
    return {"proposer": arm.data.tags["proposer"], "seed": int(arm.data.tags["agentic.seed"]),
            "run_id": arm.info.run_id, "best_cv": exact_cv(best),
            "holdout": best.data.metrics["holdout_roc_auc"], "gap": best.data.metrics["gap"],
            "best_trainer": best.data.tags["trainer"], "attempts": len(children),
            "verified": len(verified),
            "quarantined": sum(c.data.tags["verdict"] == "quarantined" for c in children),
            "failed": sum(c.info.status == "FAILED" for c in children),
            "wall_seconds": m["search_seconds"],
            "first_verified_seconds": min(c.data.metrics["finished_at_search_seconds"]
                                          for c in verified),
            "prompt_tokens": m.get("llm_prompt_tokens", 0),
            "completion_tokens": m.get("llm_completion_tokens", 0),
            "cost_usd": m.get("llm_cost_usd", 0.0)}


@pytest.mark.slow
def test_report_table_is_recomputed_from_the_runs(comparisons):
    cmp = comparisons[0]
    recomputed = {(r["proposer"], r["seed"]): r for r in map(lambda a: _recompute_arm(cmp, a),
                                                             cmp.arms())}
    for row in cmp.report["arms"]:
        mine = recomputed[(row["proposer"], row["seed"])]
        for key, value in mine.items():
            # durations are logged to the millisecond; everything else exactly
            tolerance = ({"abs": 6e-4} if key.endswith("_seconds") else
                         {"abs": 5e-5} if key in ("holdout", "gap") else {"rel": 1e-9})
            expected = value if isinstance(value, str) else pytest.approx(value, **tolerance)
            assert row[key] == expected, (row["proposer"], key)
    for row in cmp.report["summary"]:
        group = [r for r in recomputed.values() if r["proposer"] == row["proposer"]]
        for key in ("best_cv", "holdout", "gap", "wall_seconds", "first_verified_seconds",
                    "prompt_tokens"):
            assert row[key] == pytest.approx(statistics.fmean(r[key] for r in group),
                                             rel=1e-6, abs=1e-3), key
        for key in ("attempts", "verified"):  # counts: whole numbers, over all seeds
            assert row[key] == sum(r[key] for r in group), key
        assert row["holdout_std"] == pytest.approx(statistics.stdev(r["holdout"] for r in group),
                                                   abs=1e-4)
    llm = next(r for r in cmp.report["summary"] if r["proposer"] == "llm")
    assert llm["prompt_tokens"] > 0 and llm["completion_tokens"] == 20 * (BUDGET - 2)


@pytest.mark.slow
def test_comparison_run_holds_the_report(comparisons):
    cmp = comparisons[0]
    run_id = cmp.client.get_run(cmp.report["arms"][0]["run_id"]).data.tags["mlflow.parentRunId"]
    run = cmp.client.get_run(run_id)
    names = {f.path for f in cmp.client.list_artifacts(run_id)}
    assert {"comparison.md", "comparison.html", "comparison.json", "comparison_table.json",
            "comparison_arms.json", "best_so_far_by_attempt.png", "best_so_far_by_time.png",
            "cv_vs_holdout.png"} <= names
    local = mlflow.artifacts.download_artifacts(run_id=run_id, tracking_uri=cmp.uri)
    for png in ("best_so_far_by_attempt.png", "best_so_far_by_time.png", "cv_vs_holdout.png"):
        content = Path(local, png).read_bytes()
        assert content[:8] == b"\x89PNG\r\n\x1a\n" and len(content) > 20_000
    markdown = Path(local, "comparison.md").read_text()
    assert all(f"| {p} |" in markdown for p in PROPOSERS)
    assert run.data.tags["verdict"].startswith("Best mean holdout roc_auc")
    assert run.data.tags["verdict"] in run.data.tags["mlflow.note.content"]
    table = load_table(cmp.uri, run.info.experiment_id, "comparison_table.json", run_id)
    assert list(table["proposer"]) == PROPOSERS
    for row in cmp.report["summary"]:
        assert run.data.metrics[f"{row['proposer']}.holdout_roc_auc"] == \
            round(row["holdout"], 4)  # rounded for people; comparison.json keeps every digit
    assert "Per proposer" in cmp.result.output  # the console prints the table
    kind = cmp.client.get_experiment(run.info.experiment_id).tags["mlflow.experimentKind"]
    assert kind == "custom_model_development"  # the UI opens it on runs, not GenAI views


@pytest.mark.slow
def test_same_seeds_same_table(comparisons):
    first, again = comparisons
    assert first.id != again.id
    for a, b in zip(first.report["summary"], again.report["summary"], strict=True):
        for key in DETERMINISTIC:
            assert a[key] == b[key] or (a[key] != a[key] and b[key] != b[key]), \
                (a["proposer"], key)  # equal, or both NaN
    llm_again = [a for a in again.arms() if a.data.tags["proposer"] == "llm"]
    assert all(a.data.metrics["llm_seconds"] == 0 for a in llm_again)  # replayed, no network


def test_ranking_is_by_holdout_with_shared_ties():
    rows = [{"proposer": "a", "holdout": 0.8}, {"proposer": "b", "holdout": 0.9},
            {"proposer": "c", "holdout": 0.8}, {"proposer": "d", "holdout": math.nan}]
    assert rank(rows, greater_is_better=True) == {"b": 1, "a": 2.5, "c": 2.5, "d": 4}
    assert rank(rows, greater_is_better=False) == {"a": 1.5, "c": 1.5, "b": 3, "d": 4}
    table = aggregate({"one": (rows, True), "two": (rows, False)})
    assert [(r["proposer"], r["mean_rank"], r["wins"]) for r in table] == \
        [("a", 2.0, 1), ("b", 2.0, 1), ("c", 2.0, 1), ("d", 4.0, 0)]  # a tie is a win each


@pytest.mark.search
@pytest.mark.slow  # over ~3 s
def test_several_datasets_get_one_comparison_each_and_a_ranking(tmp_path, monkeypatch,
                                                                churn_frame):
    folder = tmp_path / "data"
    folder.mkdir()
    churn_frame.head(400).to_csv(folder / "churn.csv", index=False)
    scripted_frame(300).to_csv(folder / "signal.csv", index=False)
    (folder / "notes.txt").write_text("not a dataset")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = _isolated_cli(["compare", "--data", str(folder), "--proposers", "optuna,random",
                            "--budget-iterations", "4", "--seeds", "1", "--trainers", "linear",
                            "--cv", "3", "--tracking-uri", uri, "--quiet"], tmp_path,
                           monkeypatch)
    assert result.exit_code == 0, result.output
    assert "Ranking across datasets" in result.output
    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("agentic-compare")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    top = [r for r in runs if r.data.tags["agentic.role"] == "comparison-ranking"]
    per = [r for r in runs if r.data.tags["agentic.role"] == "comparison"]
    assert len(top) == 1 and sorted(r.data.tags["dataset"] for r in per) == ["churn", "signal"]
    assert all(r.data.tags["mlflow.parentRunId"] == top[0].info.run_id for r in per)
    assert {"optuna.mean_rank", "random.wins"} <= set(top[0].data.metrics)
    ranking = load_table(uri, exp.experiment_id, "ranking_table.json", top[0].info.run_id)
    assert sorted(ranking["proposer"]) == ["optuna", "random"]
    assert sum(ranking["wins"]) >= 2  # one winner per dataset (ties share)
    # one seed and a four-attempt budget decide little, and each verdict says so
    for run in per:
        assert "One seed: there is no seed-to-seed spread" in run.data.tags["verdict"]
    churn = next(r for r in per if r.data.tags["dataset"] == "churn")
    assert "- excluded columns: customerID" in churn.data.tags["mlflow.note.content"]


def test_arms_that_tried_the_same_candidates_could_not_differ():
    from mlflow_agentic.compare.table import Arm, caveats

    def arm(proposer, seed, proposed):
        return Arm("churn", proposer, seed, "r", "roc_auc", True, 0.8, 0.8, 0.0, "linear", 1, 1,
                   0, 0, 1.0, 1.0, proposed=proposed)

    same = [arm(p, s, ["linear []"]) for p in ("optuna", "sequence") for s in (1, 2)]
    assert caveats(same)[0].startswith("The proposers could not differ here")
    differ = same[:-1] + [arm("sequence", 2, ["linear []", "xgboost []"])]
    assert caveats(differ) == []
    assert caveats([arm("optuna", 1, ["a"]), arm("random", 1, ["b"])])[0].startswith("One seed")
    two_alike = [arm("optuna", 1, ["a"]), arm("sequence", 1, ["a"]), arm("random", 1, ["b"])]
    assert caveats(two_alike)[0].startswith("optuna and sequence could not differ here")


@pytest.mark.parametrize("args, message", [
    (["--budget-iterations", "5", "--time-budget", "60"], "not both"),
    (["--proposers", "optuna,genetic"], "unknown proposer(s) genetic"),
    (["--seeds", "1,two"], "expected comma-separated integers"),
    (["--proposers", "llm", "--llm-base-url", "http://127.0.0.1:9/v1"], "no answer from the LLM"),
    (["--proposers", "llm", "--llm-replay", "cmp-nothere"], "no recorded llm search"),
    (["--metric", "rmse"], "rmse"),
])
def test_bad_input_is_refused_before_any_run(tmp_path, monkeypatch, churn_frame, args,
                                             message):
    data = tmp_path / "churn.csv"
    churn_frame.head(200).to_csv(data, index=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = _isolated_cli(["compare", "--data", str(data), "--tracking-uri", uri, "--quiet",
                            *args], tmp_path, monkeypatch)
    assert result.exit_code == 2, result.output
    assert message in result.output
    client = mlflow.MlflowClient(tracking_uri=uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    assert client.search_runs(ids) == []  # nothing half-written


@pytest.mark.search
@pytest.mark.slow  # over ~3 s
def test_an_llm_that_never_answered_is_not_ranked(tmp_path, monkeypatch, churn_frame):
    """The compare guide's newcomer example against a server that lists its model, then dies at
    the first completion: the LLM's arms ran only the seed candidates, so no proposer is
    crowned; the verdict says why and the command exits 1, every arm recorded."""
    data = tmp_path / "churn.csv"
    churn_frame.head(600).to_csv(data, index=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    server = ScriptedOpenAI(script=[("die",)])
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    try:
        result = _isolated_cli(["compare", "--data", str(data), "--proposers", "llm,optuna",
                                "--budget-iterations", "6", "--seeds", "1,2", "--trainers",
                                "linear,lightgbm", "--cv", "3", "--tracking-uri", uri,
                                "--llm-base-url", server.base_url, "--llm-model", "scripted",
                                "--quiet"], tmp_path, monkeypatch)
    finally:
        server.close()
    assert result.exit_code == 1, result.output
    verdict = next(line for line in result.output.splitlines() if line.startswith("churn: "))
    assert "No comparison of proposers was made: llm made no proposal of its own" in verdict
    assert "the LLM endpoint kept failing" in verdict and "Best mean" not in verdict
    assert "no comparison of proposers was made on any dataset" in result.output
    client = mlflow.MlflowClient(tracking_uri=uri)
    ids = [e.experiment_id for e in client.search_experiments()]
    arms = client.search_runs(ids, "tags.`agentic.role` = 'search'")
    assert sorted(a.data.tags["proposer"] for a in arms) == ["llm", "llm", "optuna", "optuna"]
    report = client.search_runs(ids, "tags.`agentic.role` = 'comparison'")[0]
    assert "not ranked" not in report.data.tags["verdict"].lower()
    assert "No comparison of proposers" in report.data.tags["verdict"]


def test_proposals_are_counted_and_a_proposer_without_any_is_not_ranked():
    from mlflow_agentic.compare.table import Arm, summarize, verdict_line

    def arm(proposer, seed, holdout, proposals, stop="budget"):
        return Arm("churn", proposer, seed, "r", "roc_auc", True, holdout, holdout, 0.0, "linear",
                   4, 4, 0, 0, 1.0, 1.0, stop_reason=stop, proposals=proposals,
                   proposals_verified=proposals)

    dead = [arm("llm", s, 0.86, 0, "the LLM endpoint kept failing") for s in (1, 2)]
    rows = summarize(dead + [arm("optuna", s, 0.85, 3) for s in (1, 2)])
    assert rank(rows, True) == {"optuna": 1}
    assert verdict_line(rows, "roc_auc", True).startswith(
        "No comparison of proposers was made: llm made no proposal of its own (the LLM "
        "endpoint kept failing); only optuna searched.")
    three = summarize(dead + [arm(p, 1, h, 2) for p, h in (("optuna", 0.85), ("random", 0.84))])
    line = verdict_line(three, "roc_auc", True)
    assert line.startswith("Best mean holdout roc_auc: optuna 0.8500") and "Not ranked: llm" in line
    # one seed without a proposal: the proposer's figures are of its other seed
    mixed = summarize([arm("llm", 1, 0.9, 2), arm("llm", 2, 0.5, 0), arm("optuna", 1, 0.85, 2)])
    assert mixed[0]["holdout"] == 0.9 and mixed[0]["proposals"] == 2
