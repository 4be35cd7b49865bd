"""What the MLflow UI shows after a search, read back as the UI reads it: ``search_runs``
(the runs table), run tags, params, metric histories, artifacts, tables, the model version and
the logged model behind it."""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_agentic import Dataset, SequenceProposer, SolutionCandidate, search

pytestmark = pytest.mark.search  # its tests run searches in-process

NAME = "ui-churn"
CANDIDATES = [SolutionCandidate("linear"), SolutionCandidate("linear", {"C": 0.5}),
              SolutionCandidate("xgboost"), SolutionCandidate("random_forest")]


class Story:
    def __init__(self, uri, result):
        self.uri, self.result = uri, result
        self.client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
        self.parent = self.client.get_run(result.run_id)
        self.children = self.client.search_runs(
            [self.parent.info.experiment_id], f"tags.mlflow.parentRunId = '{result.run_id}'",
            order_by=["attributes.start_time ASC"])
        self.selected = self.client.get_run(self.parent.data.tags["selected_run_id"])
        self.version = self.client.get_model_version_by_alias(NAME, "challenger")

    def artifacts(self, run, path=None) -> list[str]:
        return [a.path for a in self.client.list_artifacts(run.info.run_id, path)]

    def challenger(self):
        """The registered ``@challenger`` as a user loads it (the registry resolves the logged
        model through the global tracking URI)."""
        mlflow.set_tracking_uri(self.uri)
        try:
            return mlflow.pyfunc.load_model(f"models:/{NAME}@challenger")
        finally:
            mlflow.set_tracking_uri(None)

    def table(self, run, name) -> pd.DataFrame:
        """A ``log_table`` artifact, as the UI's table view reads it (``load_table`` searches
        the runs through the global tracking URI)."""
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(self.uri)
        try:
            return self.client.load_table(run.info.experiment_id, name,
                                          run_ids=[run.info.run_id])
        finally:
            mlflow.set_tracking_uri(previous)

    def cli(self, *args: str) -> str:
        """``mlflow-agentic ARGS`` on this store, as a user runs it; its standard output."""
        from click.testing import CliRunner

        from mlflow_agentic.cli import main

        previous = mlflow.get_tracking_uri()
        try:
            result = CliRunner().invoke(main, [*args, "--tracking-uri", self.uri])
        finally:
            mlflow.set_tracking_uri(previous)
        assert result.exit_code == 0, result.output
        return result.stdout

    def download(self, run, path) -> Path:
        return Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id,
                                                        artifact_path=path,
                                                        tracking_uri=self.uri))


@pytest.fixture(scope="module")
def story(tmp_path_factory, churn_frame) -> Story:
    uri = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'mlflow.db'}"
    previous = mlflow.get_tracking_uri()
    try:
        result = search(Dataset.from_frame(churn_frame, name="churn"),
                        proposer=lambda: SequenceProposer(CANDIDATES), cv=3, max_iterations=4,
                        patience=5, tracking_uri=uri, experiment="ui-story",
                        register_name=NAME, say=lambda line: None)
    finally:
        mlflow.set_tracking_uri(previous)
    return Story(uri, result)


@pytest.mark.slow
def test_the_selected_attempt_is_marked_linked_and_holds_the_model(story):
    run, kids = story.result.run, story.children
    best_id = story.selected.info.run_id
    assert story.selected.data.tags["mlflow.parentRunId"] == story.parent.info.run_id
    assert int(story.selected.data.tags["attempt.index"]) == run.best_attempt.index
    assert [k.info.run_id for k in kids if k.data.tags["selected"] == "true"] == [best_id]
    assert sorted(int(k.data.tags["rank"]) for k in kids) == list(range(1, len(kids) + 1))
    ranked = sorted(kids, key=lambda k: int(k.data.tags["rank"]))
    assert [int(k.data.tags["attempt.index"]) for k in ranked] == \
        [a.index for a in run.leaderboard()]
    # the parent's description links the selected run; the selected run says why
    note = story.parent.data.tags["mlflow.note.content"]
    assert f"#/experiments/{story.parent.info.experiment_id}/runs/{best_id}" in note
    assert story.selected.data.tags["mlflow.note.content"].startswith("**selected**")
    # the model lives on the selected attempt's run, and the version points back to it
    assert story.version.run_id == best_id
    logged = story.client.get_logged_model(story.version.source.split("/")[-1])
    assert logged.source_run_id == best_id
    assert "model" not in story.artifacts(story.parent)
    contexts = {d.dataset.name: d.tags[0].value for d in story.selected.inputs.dataset_inputs}
    assert contexts["churn"] == "training" and "holdout" in contexts


def test_one_metric_name_per_meaning_and_fold_scores_as_steps(story):
    parent, selected = story.parent, story.selected
    assert parent.data.metrics["cv_roc_auc"] == pytest.approx(selected.data.metrics["cv_roc_auc"])
    assert parent.data.metrics["holdout_roc_auc"] == pytest.approx(
        story.result.holdout.selected.holdout, abs=5e-5)  # rounded for people
    every = [parent, *story.children]
    names = {k for r in every for k in r.data.metrics}
    assert not [n for n in names if re.search(r"fold\d|^best_|^elapsed", n)], names
    assert "fit_seconds" not in parent.data.metrics  # the search's is search_fit_seconds
    for kid in story.children:
        if kid.data.tags["verdict"] in ("failed", "pruned"):
            continue
        history = story.client.get_metric_history(kid.info.run_id, "cv_roc_auc_fold")
        assert [m.step for m in history] == [1, 2, 3]
        assert np.mean([m.value for m in history]) == pytest.approx(
            kid.data.metrics["cv_roc_auc"], abs=5e-5)  # the folds keep every decimal
    baseline = story.client.get_metric_history(parent.info.run_id, "baseline_roc_auc_fold")
    assert [m.step for m in baseline] == [1, 2, 3]
    # sorting the runs table by the CV column keeps parent and children comparable
    table = story.client.search_runs([parent.info.experiment_id],
                                     order_by=["metrics.cv_roc_auc DESC"])
    assert all("cv_roc_auc" in r.data.metrics for r in table)


def test_the_printed_link_opens_this_search_sorted_with_the_columns_of_its_story(story):
    """The link every search prints opens MLflow's own shared view: this search's attempts,
    best CV first, with rank, tie, selected, CV, holdout and gap as the columns (what fits at
    1440x900 beside MLflow's Assistant panel), every score rounded to 4 decimals."""
    import json

    parent = story.parent
    experiment = story.client.get_experiment(parent.info.experiment_id)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    note = parent.data.tags["mlflow.note.content"]
    assert f"runs?viewStateShareKey={parent.info.run_id}&workflowType=machine_learning" in note
    view = json.loads(experiment.tags[f"mlflow.sharedViewState.{parent.info.run_id}"])
    assert view["orderByKey"] == "metrics.`cv_roc_auc`" and view["orderByAsc"] is False
    assert view["selectedColumns"] == [
        "tags.`rank`", "tags.`tie`", "tags.`selected`", "metrics.`cv_roc_auc`",
        "metrics.`holdout_roc_auc`", "metrics.`gap`"]
    shown = story.client.search_runs([parent.info.experiment_id], view["searchFilter"],
                                     order_by=["metrics.cv_roc_auc DESC"])
    assert {r.info.run_id for r in shown} == {k.info.run_id for k in story.children}
    assert shown[0].data.tags["rank"] == "1"
    for run in shown:
        for key in ("cv_roc_auc", "cv_roc_auc_std", "holdout_roc_auc", "gap"):
            if key in run.data.metrics:
                value = run.data.metrics[key]
                assert value == round(value, 4), (key, value)
        assert run.data.tags.get("tie", "true") == "true"  # short; the detail is described


def test_no_empty_params_and_short_run_names(story):
    for r in [story.parent, *story.children]:
        assert all(v != "" for v in r.data.params.values()), r.data.params
    for kid in story.children:
        assert re.fullmatch(r"\d\d-[a-z_]+", kid.info.run_name), kid.info.run_name
        assert kid.data.tags["verdict"] in ("verified", "rejected", "quarantined", "failed",
                                            "pruned")


def test_metadata_agrees_with_itself(story):
    p = story.parent.data
    assert p.params["cv_scheme"] == p.tags["cv_scheme"] == "stratified"
    assert p.tags["cv_scheme.reason"].startswith("advice: ")
    assert "cv_scheme_reason" not in p.params
    assert p.params["excluded_columns"] == p.tags["excluded_columns"] == "customerID"
    assert story.version.tags["excluded_columns"] == "customerID"
    assert p.tags["excluded.customerID"].startswith("id:")
    assert "attempt_seconds" in story.selected.data.metrics


def test_the_model_does_not_require_the_excluded_id_column(story, churn_frame):
    model = story.challenger()
    spec = {c.name: c.required for c in model.metadata.get_input_schema().inputs}
    assert spec["customerID"] is False and spec["tenure"] is True
    rows = churn_frame.drop(columns=["Churn"]).head(20)
    assert list(model.predict(rows.drop(columns=["customerID"]))) == list(model.predict(rows))


def test_probabilities_are_an_option_of_the_served_pyfunc(story, churn_frame):
    model = story.challenger()
    rows = churn_frame.drop(columns=["Churn"]).head(25)
    labels = model.predict(rows)
    both = model.predict(rows, params={"output": "probabilities"})
    assert list(both.columns) == ["label", "probability_No", "probability_Yes"]
    assert list(both["label"]) == list(labels)
    proba = story.result.run.model.predict_proba(rows)
    assert both["probability_Yes"].to_numpy() == pytest.approx(proba[:, 1])
    assert np.allclose(both[["probability_No", "probability_Yes"]].sum(axis=1), 1.0)
    with pytest.raises(mlflow.exceptions.MlflowException, match="output"):
        model.predict(rows, params={"output": "odds"})


def test_diagnostics_and_explanations_on_the_selected_run(story):
    sel, hd_rows = story.selected, story.result.holdout.n_rows
    names = story.artifacts(sel)
    for plot in ("roc_curve_plot", "precision_recall_curve_plot", "confusion_matrix",
                 "calibration_curve_plot"):
        assert f"holdout_{plot}.png" in names
    # MLflow's evaluator recomputes the holdout score of the same model: the same number
    history = story.client.get_metric_history(sel.info.run_id, "holdout_roc_auc")
    assert any(m.value == pytest.approx(story.result.holdout.selected.holdout, abs=1e-9)
               for m in history)
    # ... and the value the runs table shows is the evidence, rounded for people
    assert sel.data.metrics["holdout_roc_auc"] == round(story.result.holdout.selected.holdout, 4)
    assert sel.data.metrics["holdout_example_count"] == hd_rows
    predictions = story.table(sel, "holdout/predictions.json")
    assert len(predictions) == hd_rows
    assert np.allclose(predictions[["probability_No", "probability_Yes"]].sum(axis=1), 1,
                       atol=1e-3)
    # the table is the scored model's own holdout output (predicted once, by the scoring):
    # its probabilities give the holdout score, its labels are the most probable class
    from sklearn.metrics import roc_auc_score
    assert roc_auc_score(predictions["actual_Churn"] == "Yes", predictions["probability_Yes"]
                         ) == pytest.approx(story.result.holdout.selected.holdout, abs=2e-3)
    likelier = np.where(predictions["probability_Yes"] > predictions["probability_No"], "Yes",
                        "No")
    assert (predictions["predicted_Churn"] == likelier).all()
    importance = story.table(sel, "explanations/permutation_importance.json")
    features = set(story.result.briefing.dataset.feature_columns)
    assert set(importance["column"]) == features and "customerID" not in features
    assert "explanations/permutation_importance.png" in story.artifacts(sel, "explanations")
    assert all(sel.data.tags[f"diagnostics.{k}"].startswith("logged in ")
               for k in ("evaluate", "predictions", "importance"))


def test_tables_are_rounded_and_the_leaderboard_links_every_run(story):
    parent = story.parent
    board = pd.read_csv(story.download(parent, "leaderboard.csv"))
    numbers = board.select_dtypes("number").to_numpy().ravel()
    numbers = numbers[~np.isnan(numbers)]
    assert np.allclose(numbers, np.round(numbers, 4))
    table = story.table(parent, "leaderboard.json")
    assert len(table) == len(story.children)
    for kid in story.children:
        row = table[table["run_id"] == kid.info.run_id].iloc[0]
        assert row["run_link"].endswith(f"/runs/{kid.info.run_id}")
        assert row["rank"] == int(kid.data.tags["rank"])
        assert row["selected"] == (kid.data.tags["selected"] == "true")
    profile = story.download(parent, "data_profile.html").read_text()
    assert "tenure" in profile and "missing_share" in profile
    ids = set(pd.read_csv(story.download(parent, "evaluation/holdout.csv"))["customerID"])
    assert not any(i in profile for i in ids)  # aggregates only: no row of any kind
    assert "cv_vs_holdout.png" in story.artifacts(parent)


def test_registered_model_and_version_descriptions_carry_the_evidence(story):
    v = story.version.description
    s = story.result.holdout.selected
    assert f"{s.holdout:.4f}" in v and f"gap {s.gap:+.4f}" in v and "CV minus holdout" in v
    assert story.selected.info.run_id in v
    assert "probabilities" in v
    model = story.client.get_registered_model(NAME)
    assert "sealed" in model.description and "@challenger" in model.description


def test_ties_are_named_with_their_standard_error(story):
    run = story.result.run
    top = run.top_attempt
    window = np.std(top.fold_scores, ddof=1) / math.sqrt(len(top.fold_scores))
    assert run.tie_window == pytest.approx(window)
    expected = {a.index for a in run.attempts if a is not top and a.verdict.valid
                and not a.verdict.quarantined and top.score - a.score <= window}
    assert {a.index for a in run.ties} == expected
    tied_tags = {int(k.data.tags["attempt.index"]) for k in story.children if "tie" in k.data.tags}
    assert tied_tags == (expected | {top.index} if expected else set())
    ties = story.parent.data.tags["ties"]
    assert ties == "none" if not expected else all(
        f"{a.index:02d}-{a.candidate.trainer}" in ties for a in run.ties)
    assert run.tie_window == top.standard_error
    # one flag in every view: the runs' tags, the leaderboard's CSV and its table
    csv = story.cli("leaderboard", story.parent.info.run_id, "--format", "csv")
    frame = pd.read_csv(io.StringIO(csv), dtype={"tie": str}).fillna({"tie": ""})
    assert {int(r.attempt) for r in frame.itertuples() if r.tie == "true"} == tied_tags
    assert set(frame["tie"]) <= {"true", ""}
    table = story.cli("leaderboard", story.parent.info.run_id)
    assert table.count(" true ") == len(tied_tags) + 1  # and the selected one's flag


def test_permutation_importance_finds_the_column_the_model_reads():
    from mlflow_agentic.tracking.results import importance
    from tests.conftest import scripted_frame
    from tests.scripted import MixClassifier

    data = Dataset.from_frame(scripted_frame(n=400, seed=1), name="scripted")
    model = MixClassifier(quality=1.0).fit(data.X, data.y)  # reads `signal` only
    table = importance(model, data, data, "roc_auc", seed=0).set_index("column")
    assert table.loc["noise", "importance_mean"] == 0.0  # shuffling it changes nothing
    assert table.loc["signal", "importance_mean"] > 0.2
    assert table.index[0] == "signal"


def test_without_diagnostics_the_model_is_still_on_the_selected_run(tmp_path):
    from tests.conftest import scripted_frame

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    try:
        result = search(scripted_frame(n=300), proposer="sequence", trainers=["linear"],
                        cv=3, ensemble=False, tracking_uri=uri, register_name="quick",
                        diagnostics=False, say=lambda line: None)
    finally:
        mlflow.set_tracking_uri(None)
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    selected = client.get_run(client.get_run(result.run_id).data.tags["selected_run_id"])
    assert not [k for k in selected.data.tags if k.startswith("diagnostics.")]
    assert not [m for m in selected.data.metrics if m.startswith("holdout_") and
                m != "holdout_roc_auc"]
    assert client.get_model_version("quick", "1").run_id == selected.info.run_id
