"""Reading a killed search back from MLflow so ``--resume RUN_ID`` can continue it.

Every finished attempt (its child run has a verdict: ended FINISHED or FAILED, or left RUNNING
after its verdict was written) comes back with
its parameters, fold scores, timings, and the out-of-fold and holdout-row outputs it recorded
(``outputs.npz``); the engine replays the search and uses these instead of fitting again
(``engine.restore``). Attempts cut mid-way are marked KILLED and run again.
"""

from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.processes import process_alive
from mlflow_agentic.core.settings import FINALIZE_DECIDES, same_on_resume
from mlflow_agentic.engine.evaluate.outcome import Outcome
from mlflow_agentic.engine.search.restore import Restored
from mlflow_agentic.tracking.store import send_pending

if TYPE_CHECKING:
    from collections.abc import Callable

    from mlflow import MlflowClient
    from mlflow.entities import Run

OUTPUTS_ARTIFACT = "outputs.npz"
"""On each complete attempt's run: ``oof`` (out-of-fold output on the training rows) and, when
the search predicts holdout rows, ``extra`` (the fold models' mean output on them)."""
DIGEST_TAG = "train_digest"
"""On the search run: a content hash of the training rows the search saw (after the split)."""
MUST_MATCH = ("proposer", "target", "task", "n_rows", "n_features", "excluded_columns",
              *same_on_resume())
"""Search parameters a resumed search must share with the killed one: they decide what is
proposed and how it is scored (the data's, and the settings declared ``same_on_resume``).
Budgets and ``n_jobs`` may change."""


@dataclass
class ResumePoint:
    """A search run to continue and what it finished."""

    run_id: str
    experiment_id: str
    params: dict[str, str]
    tags: dict[str, str]
    attempts: dict[int, Restored] = field(default_factory=dict)
    cut: dict[str, int] = field(default_factory=dict)
    """Attempt runs left RUNNING by the killed process (run id -> index): marked KILLED."""
    unended: dict[str, str] = field(default_factory=dict)
    """Finished attempts whose runs were left RUNNING (run id -> the status they end with):
    the verdict was written, the end was not (the disk filled, or the selected attempt's run
    was reopened to log the model). Restored like the others, and ended on resume."""
    finalizing: bool = False
    """Workers' attempts being finalized: replayed by a fixed list, the ensemble and the
    selection rule are finalize's own."""
    llm_calls: list[dict] = field(default_factory=list)
    """An LLM search's calls read back from its traces, in order: answered again from these,
    never asked twice (``llm.replay``)."""

    def recorded(self, name: str) -> str | None:
        """A search parameter as the search ran with it (``resolved.<name>`` under
        ``mlflow run``, where the project's given value is logged first)."""
        return self.params.get(f"resolved.{name}", self.params.get(name))

    def check(self, params: dict, digest: str) -> None:
        """Refuse to continue with other data or settings than the search ran with."""
        free = ("proposer", *FINALIZE_DECIDES) if self.finalizing else ()
        problems = [f"{k}: recorded {self.recorded(k)!r}, now {str(v)!r}"
                    for k, v in params.items() if k in MUST_MATCH and k not in free
                    and self.recorded(k) not in (None, str(v))]
        if self.tags.get(DIGEST_TAG) != digest:
            problems.insert(0, "the training rows differ (another file, target, split or "
                               "seed)")
        if problems:
            raise UserInputError(
                f"cannot resume search run {self.run_id}: " + "; ".join(problems)
                + ". Resume with the command and data the search was started with (budgets and "
                "--n-jobs may change), or start a new search without --resume")


def read_search(run_id: str, tracking_uri: str, finalizing: bool = False,
                say: Callable[[str], None] = print) -> ResumePoint:
    """``load_resume_point`` against the store at ``tracking_uri``; a killed search's (or a
    dead worker's) journal in this directory is sent to the store first
    (``delivery.send_pending``)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    point = load_resume_point(client, run_id, finalizing)  # refused (still running...) first
    if send_pending(run_id, tracking_uri, say, skip_live=finalizing):
        point = load_resume_point(client, run_id, finalizing)  # with what was journaled
    return point


LAST = "last"


def last_unfinished(tracking_uri: str, experiment: str, dataset: str) -> str:
    """``--resume last``: the latest search run of ``experiment`` on a file named like this
    one that did not finish (killed, failed, or left running by a dead process)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    runs = [] if found is None else client.search_runs(
        [found.experiment_id], f"tags.`agentic.role` = 'search' and tags.dataset = '{dataset}'"
        " and attributes.status != 'FINISHED'", order_by=["attributes.start_time DESC"],
        max_results=1)
    if not runs:
        raise UserInputError(f"--resume last: experiment {experiment!r} has no unfinished "
                             f"search of {dataset!r} to continue (pass a search run id, or "
                             "the same --experiment and --tracking-uri as the search)")
    return runs[0].info.run_id


def load_resume_point(client: MlflowClient, run_id: str, finalizing: bool = False) -> ResumePoint:
    """The search run ``run_id`` and its finished attempts; refused (with what to do) when it
    is not a search run, finished, still running, or recorded without what resuming needs.
    ``finalizing``: a shared search run, RUNNING while its workers were (they are done)."""
    from mlflow.exceptions import MlflowException

    try:
        run = client.get_run(run_id)
    except MlflowException as exc:
        raise UserInputError(
            f"no run {run_id!r} in the tracking store {client.tracking_uri}: pass the id "
            "printed as 'search run: ...' (the search's parent run in the MLflow UI), and the "
            "same --tracking-uri") from exc
    tags, status = run.data.tags, run.info.status
    if run.info.lifecycle_stage == "deleted":
        raise UserInputError(
            f"search run {run_id} is deleted (its experiment {run.info.experiment_id} or the "
            "run itself was deleted): restore it first (mlflow experiments restore "
            f"--experiment-id {run.info.experiment_id}, or mlflow runs restore --run-id "
            f"{run_id}), then resume it")
    if tags.get("agentic.role") != "search":
        raise UserInputError(f"run {run_id} is not a search run (it is "
                             f"{tags.get('agentic.role', 'not mlflow-agentic')}'s); pass the "
                             "search's parent run id")
    if status == "FINISHED" and finalizing:
        raise UserInputError(f"search run {run_id} is already finalized; its model is "
                             "registered. Start a new search with a new --study")
    if status == "FINISHED":
        raise UserInputError(f"search run {run_id} finished; there is nothing to resume. "
                             "Run the command without --resume to start a new search")
    if not finalizing:
        _refuse_if_running(run_id, status, tags)
    if DIGEST_TAG not in tags:
        raise UserInputError(f"search run {run_id} was recorded by an older mlflow-agentic "
                             "that did not keep what resuming needs; start a new search")
    point = ResumePoint(run_id, run.info.experiment_id, dict(run.data.params), dict(tags),
                        finalizing=finalizing)
    metric = point.params.get("metric", "")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one line is said
    children = client.search_runs(
        [point.experiment_id], f"tags.`mlflow.parentRunId` = '{run_id}' and "
        "tags.`agentic.role` = 'attempt'", max_results=10000)
    if point.recorded("proposer") in ("llm", "code"):
        point.llm_calls = recorded_llm_calls(client, point)
    with tempfile.TemporaryDirectory(prefix="mlflow-agentic-resume-") as tmp:
        for child in children:
            index = int(child.data.tags.get("attempt.index", "0"))
            if child.info.status in ("FINISHED", "FAILED", "RUNNING") \
                    and "verdict" in child.data.tags:
                point.attempts[index] = _restore(client, child, metric, Path(tmp))
                if child.info.status == "RUNNING":
                    point.unended[child.info.run_id] = (
                        "FAILED" if "error" in child.data.tags else "FINISHED")
            elif child.info.status == "RUNNING":
                point.cut[child.info.run_id] = index
    return point


def recorded_llm_calls(client: MlflowClient, point: ResumePoint) -> list[dict]:
    """The search's LLM calls 1..k from its ``llm.*`` traces, as replay records. Traces
    are written asynchronously, so a kill can lose the last few: the calls after the first gap
    are asked again."""
    traces, token = [], None
    while True:
        page = client.search_traces(locations=[point.experiment_id], run_id=point.run_id,
                                    max_results=500, page_token=token)
        traces.extend(page)
        token = page.token
        if not token:
            break
    calls = {}
    for trace in traces:
        span = next((s for s in trace.data.spans if s.parent_id is None), None)
        if span is None or not span.name.startswith("llm."):
            continue
        attrs, outputs = span.attributes, span.outputs or {}
        number = int(attrs.get("call", 0) or 0)
        calls[number] = {
            "trace_id": trace.info.trace_id, "model": attrs.get("model", ""),
            "mode": attrs.get("mode", ""), "text": outputs.get("text", ""),
            "error": outputs.get("error"),
            "prompt_tokens": int(attrs.get("prompt_tokens", 0) or 0),
            "completion_tokens": int(attrs.get("completion_tokens", 0) or 0)}
    replayed: list[dict] = []
    while len(replayed) + 1 in calls:
        replayed.append(calls[len(replayed) + 1])
    return replayed


def _refuse_if_running(run_id: str, status: str, tags: dict) -> None:
    if status != "RUNNING":
        return  # KILLED or FAILED: its process is gone
    pid, host = tags.get("agentic.pid", ""), tags.get("agentic.host", "?")
    if host == socket.gethostname() and pid.isdigit():
        if not process_alive(int(pid)):
            return  # killed (-9, a reboot): resumable
        raise UserInputError(f"search run {run_id} is still running (pid {pid}); stop it "
                             f"first (kill {pid}), then resume it")
    if host != socket.gethostname():
        raise UserInputError(
            f"search run {run_id} is RUNNING on host {host} (pid {pid or '?'}). If that process "
            f"is gone, mark the run killed, then resume: python -c \"import mlflow; "
            f"mlflow.MlflowClient().set_terminated('{run_id}', 'KILLED')\"")


def _restore(client: MlflowClient, child: Run, metric: str, tmp: Path) -> Restored:
    """One finished attempt as the engine needs it to stand in for running it again."""
    tags, metrics = child.data.tags, child.data.metrics
    run_id = child.info.run_id
    params = {k: v for k, v in child.data.params.items() if k != "trainer"}
    pruned = tags.get("verdict.reason") if tags.get("pruned") == "true" else None
    key = f"partial_{metric}_fold" if pruned else f"cv_{metric}_fold"
    folds = ([m.value for m in sorted(client.get_metric_history(run_id, key),
                                      key=lambda m: m.step)]
             if key in metrics else [])
    outcome = Outcome(fold_scores=folds, fit_seconds=metrics.get("fit_seconds", 0.0),
                      seconds=metrics.get("attempt_seconds", 0.0), error=tags.get("error"),
                      pruned=pruned, elapsed=metrics.get("finished_at_search_seconds", 0.0))
    if outcome.complete and tags.get("attempt.phase") != "ensemble":  # that one is recomputed
        try:
            path = client.download_artifacts(run_id, OUTPUTS_ARTIFACT, str(tmp))
        except Exception as exc:  # noqa: BLE001 - any store error means the same here
            raise UserInputError(
                f"attempt {tags.get('attempt.index')} (run {run_id}) finished but its "
                f"{OUTPUTS_ARTIFACT} cannot be read ({type(exc).__name__}: {exc}); without it "
                "the search cannot be resumed exactly. Start a new search") from exc
        with np.load(path) as saved:
            outcome.oof = saved["oof"]
            outcome.extra = saved.get("extra")
    return Restored(tags.get("trainer", params.get("trainer", "?")), params, outcome, run_id)


def write_outputs(path: Path, oof: np.ndarray, extra: np.ndarray | None) -> None:
    """A complete attempt's outputs as its run records them (what ``_restore`` reads back)."""
    arrays = {"oof": np.asarray(oof)}
    if extra is not None:
        arrays["extra"] = np.asarray(extra)
    with path.open("wb") as fh:  # np.savez on a name would add ".npz" to one without it
        np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub: allow_pickle
