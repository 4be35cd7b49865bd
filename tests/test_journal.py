"""The journal on its own, against a real sqlite store: a flush cut after a record reached the
store sends nothing twice; a folder that cannot be made falls back to the temp folder."""

from __future__ import annotations

import tempfile
from pathlib import Path

import mlflow
import numpy as np
import pytest

from mlflow_agentic.tracking.store import (
    JOURNAL_TAG,
    Journal,
    Retrying,
    TraceRefused,
    deliver_trace,
    flush_journal,
    send,
)

pytestmark = pytest.mark.slow  # a tracking store that refuses a trace


def test_a_flush_cut_after_a_record_was_sent_sends_nothing_twice(tracking_uri, tmp_path):
    client = mlflow.MlflowClient()
    experiment = client.create_experiment("journal")
    parent = client.create_run(experiment, run_name="search").info.run_id
    journal = Journal.create(parent, tracking_uri, experiment)
    create = journal.append("create_run", ref="attempt:1", experiment_id=experiment,
                            name="01-linear", tags={"mlflow.parentRunId": parent},
                            start_ms=1_700_000_000_000)
    outputs = journal.file_for("attempt-1", "outputs.npz")
    np.savez(outputs, oof=np.arange(3.0))
    journal.append("outputs", ref="attempt:1", file=str(outputs))
    journal.append("end", ref="attempt:1", ts=1_700_000_001_000, metrics={"cv_roc_auc": 0.8},
                   params={"C": "1.0"}, tags={"verdict": "verified"},
                   steps={"cv_roc_auc_fold": [0.7, 0.9]}, traceback=None, status="FINISHED",
                   end_ms=1_700_000_002_000)
    # the process died right after the store created the run, before the journal said so
    send(client, Retrying(tracking_uri), journal, create)
    journal = Journal.open(journal.path)
    assert len(journal.pending()) == 3

    then = flush_journal(journal.path, say=lambda line: None)
    assert not journal.path.exists()
    assert then == f"search(..., resume={parent!r}) with the same arguments"  # not a CLI run
    (run,) = client.search_runs([experiment], f"tags.`{JOURNAL_TAG}` = '{parent}:1'")
    runs = client.search_runs([experiment], "tags.`mlflow.parentRunId` != ''")
    assert [r.info.run_id for r in runs] == [run.info.run_id]  # found, not created twice
    assert run.info.status == "FINISHED" and run.info.start_time == 1_700_000_000_000
    history = client.get_metric_history(run.info.run_id, "cv_roc_auc_fold")
    assert [(m.step, m.value) for m in history] == [(1, 0.7), (2, 0.9)]
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["outputs.npz"]


def test_a_journal_folder_that_cannot_be_made_falls_back_to_the_temp_folder(tmp_path,
                                                                            monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("MLFLOW_AGENTIC_JOURNAL_DIR", str(blocker / "journal"))
    journal = Journal.create("run1", "sqlite:///x.db", "1")
    try:
        assert journal.path.parent == Path(tempfile.gettempdir()) / "mlflow-agentic-journal"
        assert Journal.open(journal.path).header["run_id"] == "run1"
    finally:
        journal.remove()


def test_a_trace_is_sent_once_and_one_the_store_will_not_keep_is_refused(tracking_uri):
    """A trace seen in the store is not sent again; a store that answers but does not keep a
    trace (here: its experiment does not exist) refuses it, instead of being retried forever."""
    client = mlflow.MlflowClient()
    experiment = client.create_experiment("traces")
    parent = client.create_run(experiment, run_name="search").info.run_id
    trace = {"name": "llm.propose", "inputs": {"messages": []}, "attributes": {"call": "1"},
             "tags": {"role": "propose"}, "experiment_id": experiment, "run_id": parent,
             "start_ns": None, "end_ns": None, "outputs": {"text": "{}"}, "status": "OK"}
    tried: list[str] = []
    first = deliver_trace(client, trace, tried)
    assert deliver_trace(client, trace, tried) == first and tried == [first]
    assert len(client.search_traces(locations=[experiment])) == 1
    try:
        deliver_trace(client, {**trace, "experiment_id": "424242"}, [])
    except TraceRefused as exc:
        assert "did not keep the trace of LLM call 1" in str(exc)
    else:
        raise AssertionError("a trace the store did not keep was taken as sent")
