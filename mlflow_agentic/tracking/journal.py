"""``Journal``: what a search still has to write to the tracking store, on local disk first.

Every attempt's records (its run, its outputs, its scores and verdict) are appended here before
the background writer sends them, and marked done once the store has them. While the store does
not answer, the search goes on and the records wait here; the writer sends them when it answers
again. If the search ends (or dies) first, ``mlflow-agentic flush`` sends them later, exactly
once: a record sent again after a crash finds its run by the run's ``agentic.journal`` tag, and
metrics keep the timestamps they were taken with (the store drops exact duplicates).

One JSON object per line: a header (the search run, the store, the command), then records
(``seq``, ``op``) and ``done`` marks. Outputs arrays sit next to it in ``<name>.files/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from mlflow_agentic.core.errors import UserInputError

JOURNAL_DIR_ENV = "MLFLOW_AGENTIC_JOURNAL_DIR"
DEFAULT_DIR = Path(".mlflow-agentic") / "journal"
TAG_MAX = 5000
JOURNAL_TAG = "agentic.journal"
"""On an attempt run created from the journal: ``<search run>:<seq>`` (found, not created twice)."""


def journal_dir() -> Path:
    return Path(os.environ.get(JOURNAL_DIR_ENV) or DEFAULT_DIR)


class Journal:
    """An append-only record file for one search run; safe to append from the search's thread
    while the writer marks records done."""

    def __init__(self, path: Path, header: dict[str, Any], records: list[dict] | None = None,
                 done: dict[int, str | None] | None = None) -> None:
        self.path = path
        self.header = header
        self.records = records or []
        self.done = done or {}
        """seq -> the run the record created (None for the others)."""
        self._lock = threading.Lock()

    # ---- writing ---------------------------------------------------------------------------
    @classmethod
    def create(cls, run_id: str, tracking_uri: str, experiment_id: str) -> Journal:
        """A new journal for search run ``run_id`` (``MLFLOW_AGENTIC_JOURNAL_DIR``, default
        ``.mlflow-agentic/journal`` in the working directory)."""
        folder = journal_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:  # a read-only working directory: the machine's temp folder instead
            folder = Path(tempfile.gettempdir()) / "mlflow-agentic-journal"
            folder.mkdir(parents=True, exist_ok=True)
        # one per process: two workers of one search run may share a directory
        path = (folder / f"{run_id}.{os.getpid()}.jsonl").resolve()
        header = {"journal": 1, "run_id": run_id, "tracking_uri": tracking_uri,
                  "experiment_id": experiment_id, "host": socket.gethostname(),
                  "pid": os.getpid(), "command": _command()}
        _append_line(path, header)
        return cls(path, header)

    @property
    def files(self) -> Path:
        return self.path.with_suffix(".files")

    def append(self, op: str, **fields: Any) -> dict:
        """Record ``op`` before it is sent; returns the record (its ``seq`` marks it done)."""
        with self._lock:
            record = {"seq": len(self.records) + 1, "op": op, **fields}
            self.records.append(record)
            self._write(record)
        return record

    def file_for(self, key: str, name: str) -> Path:
        """Where a record's file goes (``key``: one per attempt), kept until it is sent."""
        path = self.files / key / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def mark_done(self, record: dict, run_id: str | None = None) -> None:
        with self._lock:
            self.done[record["seq"]] = run_id
            self._write({"done": record["seq"], **({"run_id": run_id} if run_id else {})})

    def pending(self) -> list[dict]:
        return [r for r in self.records if r["seq"] not in self.done]

    def pending_attempts(self) -> list[int]:
        return self.attempts_of(self.pending())

    @staticmethod
    def attempts_of(records: list[dict]) -> list[int]:
        """The attempt indices ``records`` belong to (refs ``attempt:<index>``), sorted."""
        return sorted({int(r["ref"].split(":")[1]) for r in records
                       if r["ref"].startswith("attempt:")})

    def run_of(self, ref: str) -> str | None:
        """The run a ``create_run`` record made for ``ref`` (e.g. ``attempt:3``), if sent."""
        for record in reversed(self.records):
            if record["op"] == "create_run" and record["ref"] == ref:
                return self.done.get(record["seq"])
        return None

    def remove(self) -> None:
        """Everything is in the store: the journal goes (its directory too, when empty)."""
        self.path.unlink(missing_ok=True)
        shutil.rmtree(self.files, ignore_errors=True)
        for folder in (self.path.parent, self.path.parent.parent):
            try:
                folder.rmdir()
            except OSError:
                break

    def owner_alive(self) -> bool:
        """The search process that writes this journal still runs (it sends it itself)."""
        from mlflow_agentic.tracking.shared import process_alive

        head = self.header
        return (head.get("host") == socket.gethostname() and head.get("pid") != os.getpid()
                and process_alive(int(head.get("pid", 0))))

    def flush_command(self) -> str:
        return f"mlflow-agentic flush {shlex.quote(str(self.path))}"

    def resume_command(self) -> str:
        """The command that started the search, with ``--resume <run>`` (once)."""
        command = list(self.header.get("command") or [])
        if command[1:2] != ["run"]:
            return f"search(..., resume={self.header['run_id']!r}) with the same arguments"
        if "--resume" in command:
            at = command.index("--resume")
            del command[at:at + 2]
        return shlex.join([*command, "--resume", self.header["run_id"]])

    def _write(self, line: dict) -> None:
        _append_line(self.path, line)

    # ---- reading ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path) -> Journal:
        path = Path(path).resolve()
        if not path.exists():
            raise UserInputError(f"no journal at {path}; the journals of searches started in a "
                                 f"directory are in its {DEFAULT_DIR} (or "
                                 f"${JOURNAL_DIR_ENV})")
        header, records, done = None, [], {}
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):
                    break  # the last line cut by a crash: its record was never sent
                raise UserInputError(f"{path}:{number} is not a journal line") from None
            if "journal" in item:
                header = item
            elif "done" in item:
                done[item["done"]] = item.get("run_id")
            else:
                records.append(item)
        if header is None:
            raise UserInputError(f"{path} is not an mlflow-agentic journal (no header line)")
        return cls(path, header, records, done)


def send_pending(run_id: str, tracking_uri: str, say=print, skip_live: bool = False) -> int:
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


def find_journals() -> list[Path]:
    return sorted(journal_dir().glob("*.jsonl"))


def _named(ref: str) -> str:
    return ref.replace(":", " ")  # attempt:5 -> attempt 5


def _append_line(path: Path, line: dict) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(line, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())  # a record survives the process and a reboot


def _command() -> list[str]:
    """How this process was started, as a user would type it again."""
    argv = list(sys.argv)
    if argv and Path(argv[0]).name in ("mlflow-agentic", "__main__.py"):
        argv[0] = "mlflow-agentic"
    return argv


# ---- sending ------------------------------------------------------------------------------------
def send(client, retrying, journal: Journal, record: dict, look_first: bool = False
         ) -> str | None:
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


def send_trace(client, trace: dict) -> str:
    """Start and end one trace (an LLM call, as ``recorder`` describes it); its id. MLflow
    exports it to the tracking URI set with ``mlflow.set_tracking_uri``, on its own thread."""
    span = client.start_trace(trace["name"], span_type="CHAT_MODEL", inputs=trace["inputs"],
                              attributes=trace["attributes"], tags=trace["tags"],
                              experiment_id=trace["experiment_id"], run_id=trace["run_id"],
                              start_time_ns=trace["start_ns"])
    client.end_trace(span.trace_id, outputs=trace["outputs"], status=trace["status"],
                     end_time_ns=trace["end_ns"])
    return span.trace_id


def trace_landed(client, trace_id: str) -> bool:
    """The store holds the trace with its span (not only its header: a store that went down
    between MLflow's two calls)."""
    try:
        return bool(client.get_trace(trace_id).data.spans)
    except Exception:  # noqa: BLE001 - not there, or the store does not answer
        return False


class TraceRefused(Exception):
    """The store answers, but did not keep a trace (sending it again will not help)."""


def deliver_trace(client, trace: dict, tried: list[str]) -> str:
    """Send ``trace`` and see it in the store, once: an earlier try (``tried``, which this
    extends) that arrived whole is the answer; one that arrived without its span is deleted.
    Raises ``ConnectionError`` (a retry is in order) when the store did not answer, and
    ``TraceRefused`` when it answered but did not keep the trace."""
    import mlflow

    for earlier in tried:
        if trace_landed(client, earlier):
            return earlier
        with contextlib.suppress(Exception):
            client.delete_traces(trace["experiment_id"], trace_ids=[earlier])
    trace_id = send_trace(client, trace)
    tried.append(trace_id)
    mlflow.flush_trace_async_logging()
    if not trace_landed(client, trace_id):
        try:
            client.search_experiments(max_results=1)
        except Exception as exc:  # noqa: BLE001 - down: the caller retries
            raise ConnectionError(f"the tracking store did not keep trace {trace_id}: "
                                  f"{exc}") from exc
        raise TraceRefused(f"the tracking store answers but did not keep the trace of LLM "
                           f"call {trace['attributes'].get('call', '?')} ({trace_id})")
    return trace_id


def log_batch(client, run_id: str, metrics: dict, params: dict, tags: dict,
              steps: dict | None = None, ts: int | None = None) -> None:
    """One batch: ``steps`` maps a metric to its values at steps 1, 2, ... (fold scores: one
    metric, one step per fold, drawn as one line in the UI). ``ts`` in ms (default now): a
    batch sent again with its timestamp adds nothing (the store drops exact duplicates)."""
    from mlflow.entities import Metric, Param, RunTag

    from mlflow_agentic.engine.restore import recorded_value

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
                  say=print) -> str:
    """Send what journal ``path`` (or an opened one) still holds to its tracking store
    (``tracking_uri`` overrides the one recorded), exactly once; remove the journal when all
    is there. Returns what the user does next: nothing, or the command that finishes the
    search."""
    import mlflow

    from mlflow_agentic.tracking.store import Retrying, check_store

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
