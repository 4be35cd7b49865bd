"""The promotion gate on a real sqlite registry: what should pass passes, what should be refused
(worse on the evaluation data, quarantined, unverified, flattered by CV) is refused, every
decision is recorded on the model version, and the evidence is the runs' own: a version whose
tags were edited, or a model registered by hand with a real version's tags copied onto it, is
refused before anything is loaded."""

from __future__ import annotations

import mlflow
import pandas as pd
import pytest
from click.testing import CliRunner

from mlflow_agentic.cli import main
from mlflow_agentic.data import Dataset
from tests.conftest import CHURN, promote_cli, registered_search

NAME = "churn-gate"


@pytest.fixture(scope="module")
def gate(tmp_path_factory, churn_frame):
    """A weak and a strong search on the same 800 churn rows, and 1,000 other churn rows as
    independent evaluation data."""
    root = tmp_path_factory.mktemp("gate")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    weak = registered_search(uri, Dataset.from_frame(
        churn_frame[["gender", "MonthlyCharges", "Churn"]], name="churn"), NAME, ["linear"])
    strong = registered_search(uri, Dataset.from_frame(churn_frame, name="churn"), NAME,
                               ["linear", "hist_gradient_boosting"])
    full = pd.read_csv(CHURN)
    others = full[~full["customerID"].isin(churn_frame["customerID"])].sample(
        1000, random_state=1)
    data = root / "fresh_rows.csv"
    others.to_csv(data, index=False)
    return {"uri": uri, "weak": weak, "strong": strong, "data": str(data),
            "client": mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)}


def promote(gate, *args):
    return promote_cli(gate["uri"], NAME, *args)


def alias(gate, name):
    return str(gate["client"].get_model_version_by_alias(NAME, name).version)


def tags(gate, version):
    return gate["client"].get_model_version(NAME, str(version)).tags


def as_challenger(gate, version, **changed_tags):
    """A new version of ``version``'s model with edited evidence (as if registered by hand)."""
    client = gate["client"]
    source = client.get_model_version(NAME, str(version))
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(gate["uri"])  # the registry resolves models:/m-... globally
    try:
        new = client.create_model_version(NAME, source.source, run_id=source.run_id,
                                          tags={**source.tags, **changed_tags})
    finally:
        mlflow.set_tracking_uri(previous)
    for key in [k for k in source.tags if k.startswith("promotion.")]:
        client.delete_model_version_tag(NAME, new.version, key)
    client.set_registered_model_alias(NAME, "challenger", new.version)
    return str(new.version)


@pytest.mark.slow
def test_gate_sequence(gate):
    """One registry, in order: first champion, a better challenger, a worse one."""
    # v1 (weak) is @challenger after the first search, v2 (strong) after the second
    assert alias(gate, "challenger") == "2"
    gate["client"].set_registered_model_alias(NAME, "challenger", "1")

    first = promote(gate)  # no champion yet: evidence and the baseline decide
    assert first.exit_code == 0, first.output
    assert alias(gate, "champion") == "1"
    t = tags(gate, 1)
    assert t["promotion.decision"] == "promoted" and t["promotion.champion_score"] == "none"
    assert t["promotion.data"].startswith("holdout of search run ")
    assert t["promotion.data_rows"] == str(gate["weak"].result.holdout.n_rows)

    gate["client"].set_registered_model_alias(NAME, "challenger", "2")
    better = promote(gate, "--data", gate["data"])
    assert better.exit_code == 0, better.output
    assert alias(gate, "champion") == "2"
    t = tags(gate, 2)
    assert float(t["promotion.challenger_score"]) > float(t["promotion.champion_score"]) + 0.05
    assert t["promotion.champion_version"] == "1" and t["promotion.data_rows"] == "1000"

    worse = "1"
    gate["client"].set_registered_model_alias(NAME, "challenger", worse)
    refused = promote(gate, "--data", gate["data"])
    assert refused.exit_code == 1
    assert "not better: roc_auc" in refused.output and "90% interval [" in refused.output
    assert alias(gate, "champion") == "2"  # unchanged
    t = tags(gate, worse)
    assert t["promotion.decision"] == "refused" and t["promotion.champion_version"] == "2"
    assert float(t["promotion.challenger_score"]) < float(t["promotion.champion_score"])
    assert t["promotion.data_digest"] == tags(gate, 2)["promotion.data_digest"]  # same rows

    again = promote(gate, "--from", "champion")
    assert again.exit_code == 1 and "already @champion" in again.output


@pytest.mark.slow
def test_the_registry_and_the_gate_know_noise(tmp_path, churn_frame):
    """The same search twice registers one version (the second says why not); a challenger
    within the noise of the champion keeps the champion, with the interval printed; a dry run
    and --min-improvement say what they would do."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    name = "churn-noise"
    data = Dataset.from_frame(churn_frame, name="churn")
    first = registered_search(uri, data, name, ["linear"])
    again = registered_search(uri, data, name, ["linear"])
    assert again.tracker.model_version is None
    assert again.tracker.alias_note.startswith(
        f"not better beyond the noise than {name} version 1 (@challenger)")
    assert "90% interval [+0.0000, +0.0000]" in again.tracker.alias_note  # the same model
    client = first.client
    assert len(client.search_model_versions(f"name = '{name}'")) == 1
    note = client.get_run(again.tracker.parent_run_id).data.tags["mlflow.note.content"]
    assert "Not registered: not better beyond the noise" in note

    nearby = registered_search(uri, data, name, [
        {"trainer": "linear", "params": {"C": 0.5}}], register="always")
    assert str(nearby.tracker.model_version.version) == "2"
    for version, alias_name in (("1", "champion"), ("2", "challenger")):
        client.set_registered_model_alias(name, alias_name, version)

    tie = promote_cli(uri, name)
    assert tie.exit_code == 1, tie.output
    assert "the champion stays" in tie.output and "90% interval [-" in tie.output
    assert str(client.get_model_version_by_alias(name, "champion").version) == "1"
    recorded = client.get_model_version(name, "2").tags
    assert recorded["promotion.decision"] == "refused"
    assert recorded["promotion.comparison"].startswith("roc_auc improvement ")

    dry = promote_cli(uri, name, "--min-improvement", "-1", "--dry-run")
    assert dry.exit_code == 0 and "would promote (dry run, nothing changed)" in dry.output
    assert str(client.get_model_version_by_alias(name, "champion").version) == "1"
    loose = promote_cli(uri, name, "--min-improvement", "-1")
    assert loose.exit_code == 0, loose.output
    assert str(client.get_model_version_by_alias(name, "champion").version) == "2"


@pytest.mark.parametrize("evidence, message", [
    ({"verdict.status": "quarantined", "quarantined": "true"}, "quarantined"),
    ({"verdict.status": "rejected"}, "not verified by its search"),
    ({"gap": "0.20"}, "gap +0.2000 exceeds 0.0500"),
])
def test_broken_evidence_is_refused_even_when_better(evidence, message):
    """The decision on evidence as the runs recorded it (pure: no registry)."""
    from mlflow_agentic.scoring.promotion import decide

    good = {"metric": "roc_auc", "verdict.status": "verified", "quarantined": "false",
            "cv_roc_auc": "0.84", "gap": "0.01"}
    assert decide(good, metric="roc_auc", challenger_score=0.9, challenger_beats_baseline=True,
                  baseline_reason="", champion_score=0.8).promoted
    decision = decide({**good, **evidence}, metric="roc_auc", challenger_score=0.9,
                      challenger_beats_baseline=True, baseline_reason="", champion_score=0.8)
    assert not decision.promoted and message in decision.summary


@pytest.mark.parametrize("edited, message", [
    ({"verdict.status": "verified", "holdout_roc_auc": "0.990000"},
     "tag holdout_roc_auc=0.990000 disagrees with the runs"),
    ({"gap": "0.000000"}, "tag gap=0.000000 disagrees with the runs"),
    ({"quarantined": "false", "verdict.status": "quarantined"},
     "tag verdict.status=quarantined disagrees with the runs (verified)"),
])
@pytest.mark.search
def test_a_real_version_whose_tags_were_edited_is_refused(gate, edited, message):
    client = gate["client"]
    original = dict(tags(gate, 2))
    client.set_registered_model_alias(NAME, "challenger", "2")
    try:
        for key, value in edited.items():
            client.set_model_version_tag(NAME, "2", key, value)
        result = promote(gate, "--data", gate["data"])
    finally:
        for key in edited:
            client.set_model_version_tag(NAME, "2", key, original[key])
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert tags(gate, 2)["promotion.decision"] == "refused"


def hand_registered(gate, churn_frame, *, run_id: str | None = None) -> str:
    """A model trained by hand on every row (the holdout included), registered with the tags
    of the real version 2 copied onto it: forged evidence."""
    from sklearn.linear_model import LogisticRegression

    X = churn_frame[["tenure", "MonthlyCharges"]]
    model = LogisticRegression().fit(X, churn_frame["Churn"])
    client = gate["client"]
    real = {k: v for k, v in tags(gate, 2).items() if not k.startswith("promotion.")}
    mlflow.set_tracking_uri(gate["uri"])
    try:
        with mlflow.start_run():
            info = mlflow.sklearn.log_model(model, name="model", input_example=X.head(3))
        mv = client.create_model_version(NAME, info.model_uri, run_id=run_id or info.run_id,
                                         tags=real)
        client.set_registered_model_alias(NAME, "challenger", mv.version)
    finally:
        mlflow.set_tracking_uri(None)
    return str(mv.version)


@pytest.mark.slow
def test_a_hand_registered_model_with_copied_evidence_is_refused(gate, churn_frame):
    version = hand_registered(gate, churn_frame)
    result = promote(gate)
    assert result.exit_code == 1, result.output
    assert "is not an attempt of an mlflow-agentic search run" in result.output
    assert tags(gate, version)["promotion.decision"] == "refused"
    # pointed at a real attempt run, it still holds another model than that run logged
    real_run = gate["client"].get_model_version(NAME, "2").run_id
    version = hand_registered(gate, churn_frame, run_id=real_run)
    result = promote(gate)
    assert result.exit_code == 1, result.output
    assert "not the model its source run logged" in result.output
    assert "records registering churn-gate version 2, not version" in result.output
    assert tags(gate, version)["promotion.decision"] == "refused"


@pytest.mark.search
def test_unknown_model_or_alias_is_a_clear_error(gate):
    result = CliRunner().invoke(main, ["promote", "--model", "nope", "--tracking-uri",
                                       gate["uri"]])
    assert result.exit_code == 2 and "no registered model named 'nope'" in result.output
    result = promote(gate, "--from", "staging")
    assert result.exit_code == 2 and "no version with alias @staging" in result.output


def _has(gate, name):
    try:
        gate["client"].get_model_version_by_alias(NAME, name)
        return True
    except mlflow.exceptions.MlflowException:
        return False


@pytest.mark.slow
def test_a_version_not_above_the_trivial_baseline_on_its_holdout_gets_no_alias(
        tracking_uri, churn_frame):
    """CV said 0.518, the sealed holdout 0.458 against a 0.5 baseline: the version is
    registered with its evidence, and @challenger does not move to it."""
    from sklearn.linear_model import LogisticRegression

    from mlflow_agentic.tracking.registry import register as register_model

    X = churn_frame[["tenure", "MonthlyCharges"]]
    model = LogisticRegression().fit(X, churn_frame["Churn"])
    mlflow.set_experiment("weak-models")  # this store's own (not one set by an earlier test)
    with mlflow.start_run():
        info = mlflow.sklearn.log_model(model, name="model")
    evidence = {"metric": "roc_auc", "cv_roc_auc": "0.518", "baseline_roc_auc": "0.5"}
    mv, note = register_model(info.model_uri, "weak", {**evidence, "holdout_roc_auc": "0.458"})
    assert note.startswith(f"@challenger not moved to version {mv.version}: its sealed-holdout "
                           "roc_auc 0.4580 is not above the trivial baseline 0.5000")
    client = mlflow.MlflowClient()
    assert client.get_registered_model("weak").aliases == {}
    assert client.get_model_version("weak", mv.version).tags["alias_decision"] == note
    better, note = register_model(info.model_uri, "weak", {**evidence,
                                                            "holdout_roc_auc": "0.61"})
    assert note == f"@challenger -> version {better.version}"
    # W3: a submitter's choice the holdout contradicts (self-deceived) does not challenge
    flattered, note = register_model(info.model_uri, "weak", {
        **evidence, "cv_roc_auc": "0.9593", "holdout_roc_auc": "0.8478", "gap": "0.1115",
        "self_deceived": "true", "selection": "submitter"})
    assert note.startswith(f"@challenger not moved to version {flattered.version}: its "
                           "holdout gap 0.1115 is above the limit")
    assert client.get_registered_model("weak").aliases == {"challenger": better.version}


def test_a_version_whose_search_run_lost_its_holdout_is_told_to_pass_data(tracking_uri):
    """The gate scores on the search's recorded holdout; a run without one is a clear error
    naming the run and ``--data PATH``, not a traceback."""
    from mlflow_agentic.core.errors import UserInputError
    from mlflow_agentic.tracking.registry.promotion import _evaluation_data

    client = mlflow.MlflowClient()
    run = client.create_run(client.create_experiment("no-holdout")).info.run_id
    with pytest.raises(UserInputError, match=f"search run {run} has no .*pass --data PATH"):
        _evaluation_data({"search_run_id": run, "target": "y"}, None)


@pytest.mark.search
@pytest.mark.slow  # over ~3 s
def test_w6_a_deeper_forgery_with_edited_run_tags_is_refused_by_the_models_digest(
        gate, churn_frame):
    """W6: the real search run's registered_version and the real attempt's model_uri tags
    edited to point at a hand-made model registered under the real attempt's run id. The
    tags agree now; the model's files do not match the digest the attempt run logged as a
    param when the search logged its model (params cannot be changed)."""
    client = gate["client"]
    real = client.get_model_version(NAME, "2")
    attempt = client.get_run(real.run_id)
    search_run = attempt.data.tags["mlflow.parentRunId"]
    assert len(attempt.data.params["model_sha256"]) == 64
    version = hand_registered(gate, churn_frame, run_id=real.run_id)
    forged = client.get_model_version(NAME, version)
    client.set_tag(search_run, "registered_version", version)
    client.set_tag(real.run_id, "model_uri", forged.source)
    with pytest.raises(mlflow.exceptions.MlflowException):
        client.log_param(real.run_id, "model_sha256", "0" * 64)  # immutable once logged
    try:
        result = promote(gate, "--dry-run")
        assert result.exit_code == 1, result.output
        assert "are not the model its search logged" in result.output
        assert "would promote" not in result.output
    finally:
        client.set_tag(search_run, "registered_version", "2")
        client.set_tag(real.run_id, "model_uri", real.source)


def test_a_fresh_holdout_score_unlike_the_recorded_one_is_refused():
    from mlflow_agentic.tracking.registry.promotion import _score_moved

    evidence = {"holdout_roc_auc": "0.8543"}
    on_holdout = "holdout of search run abc"
    assert _score_moved(evidence, "roc_auc", 0.85434, on_holdout) == ""
    moved = _score_moved(evidence, "roc_auc", 0.5604, on_holdout)
    assert "0.5604" in moved and "0.8543" in moved and "refused" in moved
    assert _score_moved(evidence, "roc_auc", 0.5604, "file new.csv") == ""  # other rows
    assert _score_moved({"holdout_rmse": "145.2"}, "rmse", 145.21, on_holdout) == ""


@pytest.mark.slow
def test_the_gate_recomputes_the_gap_and_ignores_an_edited_one(gate):
    """An edited ``gap`` metric on the attempt run changes nothing: the gate's gap is the
    recorded CV minus the holdout score it computes itself."""
    client = gate["client"]
    real = client.get_model_version(NAME, "2")
    original = client.get_run(real.run_id).data.metrics["gap"]
    client.set_registered_model_alias(NAME, "challenger", "2")
    try:
        client.log_metric(real.run_id, "gap", 5.0)
        result = promote(gate, "--dry-run")
        assert "+5.0000" not in result.output, result.output
        assert "gap" not in result.output or "exceeds" not in result.output
    finally:
        client.log_metric(real.run_id, "gap", original)


@pytest.mark.slow
def test_a_swapped_champion_is_never_loaded(gate):
    """The champion's files are checked by digest before it is loaded to compare: a swapped
    pickle would run its code here, and a worse one would flip the decision."""
    from pathlib import Path

    client = gate["client"]
    client.set_registered_model_alias(NAME, "champion", "1")
    client.set_registered_model_alias(NAME, "challenger", "2")
    champion = client.get_model_version(NAME, "1")
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(gate["uri"])
    try:
        folder = Path(mlflow.artifacts.download_artifacts(champion.source))
        logged = client.get_logged_model(champion.source.rsplit("/", 1)[-1])
    finally:
        mlflow.set_tracking_uri(previous)
    target = Path(logged.artifact_location.removeprefix("file://")) / "MLmodel"
    kept = target.read_bytes()
    assert folder.exists()
    try:
        target.write_bytes(kept + b"\n# swapped\n")
        result = promote(gate, "--dry-run")
        assert result.exit_code == 1, result.output
        assert "the @champion (version 1) cannot be compared" in result.output
        assert "nothing was loaded" in result.output
    finally:
        target.write_bytes(kept)


@pytest.mark.slow
def test_two_promotions_at_once_move_the_alias_once(gate):
    import threading

    from mlflow_agentic.tracking.registry.promotion import promote as gate_promote

    client = gate["client"]
    client.set_registered_model_alias(NAME, "champion", "1")
    client.set_registered_model_alias(NAME, "challenger", "2")
    outcomes: list = []
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(gate["uri"])
    try:
        threads = [threading.Thread(target=lambda: outcomes.append(gate_promote(NAME)))
                   for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        mlflow.set_tracking_uri(previous)
    assert sorted(o.decision.promoted for o in outcomes) == [False, True]
    refused = next(o for o in outcomes if not o.decision.promoted)
    assert "already @champion" in " ".join(refused.decision.reasons)
    assert alias(gate, "champion") == "2"


def test_a_code_model_stays_code_whatever_its_trainer_tag_says(tmp_path):
    from mlflow_agentic.tracking.registry.provenance import generated_code

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.create_run(client.create_experiment("x"))
    client.log_param(run.info.run_id, "code_sha256", "ab12")
    client.set_tag(run.info.run_id, "trainer", "linear")  # edited after the search
    assert generated_code(client.get_run(run.info.run_id))
