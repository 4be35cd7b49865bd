"""How the search run begins in the cases besides a new one, and how runs left behind are found.

A resumed search reopens its own run (``--resume``); a worker of a shared study joins the run
another worker created; a new search marks runs whose process is gone. Each takes the
``SearchRun`` it works on.
"""

from __future__ import annotations

import os
import socket
import warnings

import mlflow
from mlflow.models import infer_signature

from mlflow_agentic.core.observer import SearchContext
from mlflow_agentic.core.processes import process_alive
from mlflow_agentic.data.split import frame_digest
from mlflow_agentic.tracking.registry import schema_sample
from mlflow_agentic.tracking.store import begin as begin_context


def dataset_source(ds):
    """The training rows as an MLflow dataset (``mlflow.log_input``). The digest is ours (a
    vectorized hash of every row): MLflow's maps ``type`` over every cell (2 s at 8k x 1,500)."""
    with warnings.catch_warnings():  # source resolution and int-schema hints: noise here
        warnings.simplefilter("ignore", UserWarning)
        source = mlflow.data.from_pandas(ds.frame, source=ds.source or "in-memory",
                                         targets=ds.target, name=ds.name,
                                         digest=frame_digest(ds.frame)[:8])
        # `schema` is a cached property inferred from every value; settle it on a sample
        source.__dict__["schema"] = infer_signature(schema_sample(ds.frame)).inputs
    return source


def reopen(search, context: SearchContext) -> None:
    """Continue the killed search in its own run: back to RUNNING, its attempts cut
    mid-way marked KILLED (they run again), its finished attempts' runs kept as they are
    (ended, where the kill came after an attempt's verdict and before its run's end)."""
    point, ds = search.resume, context.dataset
    search.search_id = point.tags.get("agentic.search_id", search.search_id)
    search.conn.call("choosing the experiment", mlflow.set_experiment,
              experiment_id=point.experiment_id)
    search.context_token = begin_context(search_id=search.search_id,
                                            proposer=context.proposer_name,
                                            dataset=ds.name)
    run = search.conn.call("reopening the search run", mlflow.start_run, run_id=point.run_id)
    search.run_id, search.experiment_id = run.info.run_id, run.info.experiment_id
    search.source_name = run.data.tags.get("mlflow.source.name", "")
    for run_id, index in point.cut.items():
        search.conn.log(run_id, {}, {}, {"resume.note": f"cut when the search was killed; attempt "
                                  f"{index} runs again on resume"})
        search.conn.client.set_terminated(run_id, "KILLED")
    for run_id, status in point.unended.items():
        search.conn.client.set_terminated(run_id, status)
    for stale in ("error", "kept"):  # the interruption's; the resumed search says its own
        if stale in point.tags:
            search.conn.client.delete_tag(search.run_id, stale)
    note = (f"{len(point.attempts)} finished attempt(s) read back, not run again; "
            f"{len(point.cut)} cut attempt(s) marked KILLED")
    if point.llm_calls:
        note += f"; {len(point.llm_calls)} LLM call(s) answered from their traces, not asked"
    if point.finalizing:
        what = {"finalized": note}
    else:
        resumed = int(point.tags.get("resumed", "0")) + 1
        what = {"resumed": str(resumed), f"resume.{resumed}": note}
    search.conn.log(search.run_id, {}, {}, {
        "status": "running", **what, "agentic.host": socket.gethostname(),
        "agentic.pid": str(os.getpid())})
    search.dataset_input = dataset_source(ds)  # logged when the search started
    verb = "finalizing" if point.finalizing else "resuming"
    search.say(f"{verb} search run {search.run_id}: {note}")

def join(search, context: SearchContext) -> None:
    """A worker joining the search run another worker created: nothing logged on it but
    this worker's presence; its attempts become that run's children."""
    run = search.conn.client.get_run(search.shared.run_id)
    search.run_id, search.experiment_id = run.info.run_id, run.info.experiment_id
    search.source_name = run.data.tags.get("mlflow.source.name", "")
    search.search_id = run.data.tags.get("agentic.search_id", search.search_id)
    search.context_token = begin_context(search_id=search.search_id,
                                            proposer=context.proposer_name,
                                            dataset=context.dataset.name)
    search.dataset_input = dataset_source(context.dataset)
    search.worker_note("running")

def notice_stale_searches(search) -> None:
    """Search runs of this experiment left RUNNING by a process that is gone (kill -9, a
    reboot): marked KILLED when provably dead (same host, no such pid), else pointed out."""
    runs = search.conn.client.search_runs(
        [search.experiment_id], "tags.`agentic.role` = 'search' and attributes.status = "
        "'RUNNING'", max_results=50)
    host = socket.gethostname()
    for run in runs:
        run_id, tags = run.info.run_id, run.data.tags
        if run_id == search.run_id or "agentic.study" in tags:
            continue  # ours, or shared by workers (finalize ends it)
        pid = tags.get("agentic.pid", "")
        here = tags.get("agentic.host") == host and pid.isdigit()
        if here and process_alive(int(pid)):
            continue  # another search running now on this machine
        if here:
            children = search.conn.client.search_runs(
                [search.experiment_id], f"tags.`mlflow.parentRunId` = '{run_id}' and "
                "attributes.status = 'RUNNING'", max_results=1000)
            why = (f"its process {pid} on {host} was gone when search "
                   f"{search.run_id} started")
            for child in children:
                search.conn.client.set_terminated(child.info.run_id, "KILLED")
            search.conn.log(run_id, {}, {}, {"status": "killed", "error": why})
            search.conn.client.set_terminated(run_id, "KILLED")
            search.say(f"note: search run {run_id} was left RUNNING ({why}): marked it and "
                     f"{len(children)} attempt(s) under way KILLED; its finished attempts "
                     f"stay recorded (continue it with --resume {run_id})")
        else:
            search.say(f"note: search run {run_id} is still RUNNING (pid {pid or '?'} on "
                     f"{tags.get('agentic.host', '?')}). If that process is gone, mark it: "
                     f"python -c \"import mlflow; mlflow.MlflowClient().set_terminated("
                     f"'{run_id}', 'KILLED')\"")
