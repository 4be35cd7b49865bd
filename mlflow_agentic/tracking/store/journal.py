"""``Journal``: what a search still has to write to the tracking store, on local disk first.

Every attempt's records (its run, its outputs, its scores and verdict) are appended here before
the background writer sends them, and marked done once the store has them. While the store does
not answer, the search goes on and the records wait here; the writer sends them when it answers
again. If the search ends (or dies) first, ``mlflow-agentic flush`` sends them later, exactly
once: a record sent again after a crash finds its run by the run's ``agentic.journal`` tag, and
metrics keep the timestamps they were taken with (the store drops exact duplicates).

One JSON object per line: a header (the search run, the store, the command), then records
(``seq``, ``op``) and ``done`` marks. Outputs arrays sit next to it in ``<name>.files/``. This
module is the disk side only; ``tracking.store.delivery`` writes the records to the store.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
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

    def pending_attempts(self) -> tuple[list[int], list[int]]:
        """The attempts with records still to send: those that finished (their ``end`` record
        waits) and those cut before their end was written."""
        pending = self.pending()
        ended = set(self.attempts_of([r for r in pending if r["op"] == "end"]))
        started = set(self.attempts_of(pending)) - ended
        return sorted(ended), sorted(started)

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
        from mlflow_agentic.core.processes import process_alive

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


def find_journals() -> list[Path]:
    return sorted(journal_dir().glob("*.jsonl"))


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
