"""Delivery: a journal's records written to the tracking store, each exactly once.

The writer thread sends each record as it is journaled (``send``); ``flush_journal`` sends what
a search that ended (or died) left behind; ``send_pending`` does so before a resume reads the
store. LLM calls are traces, seen in the store before they count as sent (``deliver_trace``).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.tracking.store.journal import JOURNAL_TAG, TAG_MAX, Journal, journal_dir

if TYPE_CHECKING:
    from collections.abc import Callable

    from mlflow_agentic.tracking.store.retry import Retrying, StoreClient


def _named(ref: str) -> str:
    return ref.replace(":", " ")  # attempt:5 -> attempt 5


def send(client: StoreClient, retrying: Retrying, journal: Journal, record: dict,
         look_first: bool = False) -> str | None:
    """Write one record to the store (each call retried by ``retrying``); returns the run a
    ``create_run`` made or found, or the id of a trace sent. ``look_first``: the record may
    have been sent before (a flush after a crash): its run is looked up by its journal tag
    before one is created."""
    op = record["op"]
    if op == "trace":  # returns the trace's id; None when the store refused it
        try:
            return retrying.call(f"sending the trace of LLM {_named(record['ref'])}",
                                 deliver_trace, client, record["trace"],
                                 list(record.get("tried", [])))
        except TraceRefused as exc:  # a trace is not worth failing the search over
            retrying.say(f"{exc}; the call is kept in the search run's llm_exchanges.jsonl")
            return None
    if op == "create_run":
        key = f"{journal.header['run_id']}:{record['seq']}"
        tries = 0

        def create() -> str:
            nonlocal tries
            tries += 1
            if look_first or tries > 1:  # an earlier try may have created it, unanswered
                found = client.search_runs([record["experiment_id"]],
                                           f"tags.`{JOURNAL_TAG}` = '{key}'", max_results=1)
                if found:
                    return found[0].info.run_id
            return client.create_run(record["experiment_id"], start_time=record["start_ms"],
                                     tags={**record["tags"], JOURNAL_TAG: key},
                                     run_name=record["name"]).info.run_id

        return retrying.call(f"creating the run of {_named(record['ref'])}", create)
    run_id = journal.run_of(record["ref"])
    if run_id is None:
        raise RuntimeError(f"journal {journal.path}: record {record['seq']} ({op}) comes "
                           f"before the run of {record['ref']} was created")
    what = f"recording {_named(record['ref'])}"
    if op == "outputs":
        retrying.call(what, client.log_artifact, run_id, record["file"], record.get("folder"))
    elif op == "end":
        if record.get("traceback"):
            retrying.call(what, client.log_text, run_id, record["traceback"], "error.txt")
        retrying.call(what, log_batch, client, run_id, record["metrics"], record["params"],
                      record["tags"], record.get("steps"), record["ts"])
        retrying.call(what, client.set_terminated, run_id, record["status"],
                      end_time=record["end_ms"])
    else:
        raise RuntimeError(f"journal {journal.path}: unknown record {op!r}")
    return None


def send_trace(client: StoreClient, trace: dict) -> str:
    """Start and end one trace (an LLM call, as ``recorder`` describes it); its id. MLflow
    exports it to the tracking URI set with ``mlflow.set_tracking_uri``, on its own thread."""
    span = client.start_trace(trace["name"], span_type="CHAT_MODEL", inputs=trace["inputs"],
                              attributes=trace["attributes"], tags=trace["tags"],
                              experiment_id=trace["experiment_id"], run_id=trace["run_id"],
                              start_time_ns=trace["start_ns"])
    client.end_trace(span.trace_id, outputs=trace["outputs"], status=trace["status"],
                     end_time_ns=trace["end_ns"])
    return span.trace_id


def trace_landed(client: StoreClient, trace_id: str) -> bool:
    """The store holds the trace with its span (not only its header: a store that went down
    between MLflow's two calls)."""
    try:
        return bool(client.get_trace(trace_id).data.spans)
    except Exception:  # noqa: BLE001 - not there, or the store does not answer
        return False


class TraceRefused(Exception):
    """The store answers, but did not keep a trace (sending it again will not help)."""


REFUSED_AFTER = 3  # sends seen missing while the store answered, before it counts as refused


def deliver_trace(client: StoreClient, trace: dict, tried: list[str]) -> str:
    """Send ``trace`` and see it in the store, once: an earlier try (``tried``, which this
    extends) that arrived whole is the answer; one that arrived without its span is deleted.
    Raises ``ConnectionError`` (a retry is in order) when the store did not answer, and
    ``TraceRefused`` when it answered but did not keep the trace ``REFUSED_AFTER`` times in a
    row (a server just coming back answers a query before its trace export works: measured)."""
    import mlflow

    for attempt in range(1, REFUSED_AFTER + 1):
        for earlier in tried:
            if trace_landed(client, earlier):
                return earlier
            with contextlib.suppress(Exception):
                client.delete_traces(trace["experiment_id"], trace_ids=[earlier])
        trace_id = send_trace(client, trace)
        tried.append(trace_id)
        mlflow.flush_trace_async_logging()
        if trace_landed(client, trace_id):
            return trace_id
        try:
            client.search_experiments(max_results=1)
        except Exception as exc:  # noqa: BLE001 - down: the caller retries
            raise ConnectionError(f"the tracking store did not keep trace {trace_id}: "
                                  f"{exc}") from exc
        if attempt < REFUSED_AFTER:
            time.sleep(attempt)  # 1 s, 2 s: the server may still be starting
    raise TraceRefused(f"the tracking store answers but did not keep the trace of LLM "
                       f"call {trace['attributes'].get('call', '?')} ({tried[-1]})")


def log_batch(client: StoreClient, run_id: str, metrics: dict, params: dict, tags: dict,
              steps: dict | None = None, ts: int | None = None) -> None:
    """One batch: ``steps`` maps a metric to its values at steps 1, 2, ... (fold scores: one
    metric, one step per fold, drawn as one line in the UI). ``ts`` in ms (default now): a
    batch sent again with its timestamp adds nothing (the store drops exact duplicates)."""
    from mlflow.entities import Metric, Param, RunTag

    from mlflow_agentic.engine.search.restore import recorded_value

    ts = int(time.time() * 1000) if ts is None else ts
    metrics = {k: round(float(v), 3) if k.endswith("_seconds") else v
               for k, v in metrics.items()}  # milliseconds are enough for a duration
    series = [Metric(k, float(v), ts, step)
              for k, values in (steps or {}).items()
              for step, v in enumerate(values, start=1)]
    client.log_batch(
        run_id,
        metrics=[Metric(k, float(v), ts, 0) for k, v in metrics.items()] + series,
        params=[Param(k, recorded_value(v)) for k, v in params.items()],
        tags=[RunTag(k, str(v)[:TAG_MAX]) for k, v in tags.items()],
    )


def flush_journal(path: str | Path | Journal, tracking_uri: str | None = None,
                  say: Callable[[str], None] = print) -> str:
    """Send what journal ``path`` (or an opened one) still holds to its tracking store
    (``tracking_uri`` overrides the one recorded), exactly once; remove the journal when all
    is there. Returns what the user does next: nothing, or the command that finishes the
    search."""
    import mlflow

    from mlflow_agentic.tracking.store.check import check_store
    from mlflow_agentic.tracking.store.retry import Retrying

    journal = path if isinstance(path, Journal) else Journal.open(path)
    head = journal.header
    if journal.owner_alive():
        raise UserInputError(f"journal {journal.path} belongs to search process {head['pid']}, "
                             "which is still running: it sends its records itself")
    uri = check_store(tracking_uri or head["tracking_uri"])
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # one line per run
    pending = journal.pending()
    client = mlflow.MlflowClient(tracking_uri=uri)
    mlflow.set_tracking_uri(uri)  # where MLflow exports the traces waiting here
    retrying = Retrying(uri, say=say)
    for record in pending:
        journal.mark_done(record, send(client, retrying, journal, record, look_first=True))
    if any(r["op"] == "trace" for r in pending):  # sent, and seen: no exit-time flush line
        mlflow.flush_trace_async_logging(terminate=True)
    attempts = journal.attempts_of(pending)
    say(f"sent {len(pending)} record(s) of search run {head['run_id']} to {uri}"
        + (f" (attempts {', '.join(map(str, attempts))})" if attempts else ""))
    journal.remove()
    if client.get_run(head["run_id"]).info.status == "FINISHED":
        return ""
    return journal.resume_command()


def send_pending(run_id: str, tracking_uri: str, say: Callable[[str], None] = print,
                 skip_live: bool = False) -> int:
    """Before a resume (or a finalize) reads the store: the killed search's (or a dead
    worker's) journals in this directory are sent first (what it finished but had not yet
    written), so nothing it finished runs again or is lost. ``skip_live``: journals of
    processes still running (workers) are theirs to send. Returns the number of records sent."""
    sent = 0
    for path in journal_dir().glob(f"{run_id}.*.jsonl"):
        journal = Journal.open(path)
        if skip_live and journal.owner_alive():
            continue
        pending = len(journal.pending())
        if pending:
            flush_journal(journal, tracking_uri, say=lambda line: None)
            say(f"sent {pending} journaled record(s) of search run {run_id} first ({path})")
            sent += pending
        else:
            journal.remove()
    return sent
