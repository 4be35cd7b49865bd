"""``AttemptRuns``: one child run per attempt, written through the journal.

Each record goes to disk first (``tracking.store.journal``) and to the store on the writer's thread
(``tracking.store.writer``), so a store that is down costs the search nothing and loses nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow_agentic.core import evidence as ev
from mlflow_agentic.core.types import AttemptRecord, EngineeringRun, SolutionCandidate
from mlflow_agentic.engine.search.restore import recorded_value
from mlflow_agentic.scoring.plot import trainer_colour
from mlflow_agentic.tracking.live.llm_calls import LLMCalls
from mlflow_agentic.tracking.live.search_run import SearchRun
from mlflow_agentic.tracking.resume import OUTPUTS_ARTIFACT, write_outputs
from mlflow_agentic.tracking.store import (
    AGAIN,
    TAG_MAX,
    BackgroundWriter,
    Connection,
    Journal,
    TrackingUnavailable,
    search_tags,
    send,
)


@dataclass(frozen=True)
class _Opened:
    conn: Connection
    journal: Journal


class AttemptRuns:
    """The attempts' runs of one search run."""

    def __init__(self, search: SearchRun, say) -> None:
        self.search = search
        self.say = say
        self.writer = BackgroundWriter()
        self.journal: Journal | None = None
        """The attempts' records on disk until the store has them."""
        self.conn: Connection | None = None
        point = search.resume
        self.child_run_ids: dict[int, str] = (
            {i: r.run_id for i, r in point.attempts.items()} if point is not None else {})
        self.ended: list[int] = sorted(point.attempts) if point is not None else []
        self.open: set[int] = set()
        self.late_traces = 0
        """LLM calls whose trace the writer sent after an outage."""
        self.last_start = 0
        self.llm = LLMCalls(say, self._journal_trace)
        self.members: dict[int, tuple[str, Mapping[str, Any]]] = {}
        """Attempt index -> (trainer, params): what an ensemble's script refits."""

    @property
    def opened(self) -> _Opened:
        """The store and the journal, once ``begin`` has them."""
        assert self.journal is not None and self.conn is not None, "begin() comes first"
        return _Opened(self.conn, self.journal)

    def begin(self, conn: Connection) -> None:
        """The journal of this search, once its run exists."""
        self.conn = conn
        self.journal = Journal.create(self.search.run_id, conn.uri, self.search.experiment_id)
        conn.sending.meanwhile = (f"the search goes on; its records wait in the journal "
                                  f"{self.opened.journal.path}")

    def start(self, index: int, candidate: SolutionCandidate) -> None:
        point = self.search.resume
        restored = point.attempts.get(index) if point is not None else None
        if restored is not None:  # finished before the search was killed: its run stays
            self.child_run_ids[index] = restored.run_id
            return
        trainer = getattr(candidate, "trainer", "?")
        trial = getattr(candidate, "trial", None)
        extra = {} if trial is None else {"optuna.trial": str(trial)}
        number = index
        if self.search.shared is not None:  # numbered across workers by the study's trial
            number = index if trial is None else trial + 1
            extra["worker"] = self.search.shared.worker
        tags = {"mlflow.parentRunId": self.search.run_id, "agentic.role": "attempt",
                "attempt.index": str(number), "mlflow.source.name": self.search.source_name,
                "mlflow.runColor": trainer_colour(trainer, self.search.context.trainers),
                **extra, **search_tags()}  # the search's context: this thread's
        # a batch starts in one millisecond: the runs list sorts by start time, in order
        self.last_start = max(_now_ms(), self.last_start + 1)
        title = getattr(candidate, "title", trainer)
        self._journaled(index, "create_run", experiment_id=self.search.experiment_id,
                        name=f"{number:02d}-{title}", tags=tags, start_ms=self.last_start)

    def outputs(self, record: AttemptRecord, oof, extra) -> None:
        """What resuming needs to not fit this attempt again (``tracking.resume``)."""
        path = self.opened.journal.file_for(f"attempt-{record.index}", OUTPUTS_ARTIFACT)
        write_outputs(path, oof, extra)
        self._journaled(record.index, "outputs", file=str(path))

    def end(self, record: AttemptRecord) -> None:
        """The attempt's scores, verdict and files; its run ends FINISHED (or FAILED)."""
        usage, usage_tags = self.llm.take()
        self.members[record.index] = (record.candidate.trainer, record.params)
        if record.restored:  # recorded by the search that ran it (its call's usage too)
            return
        metrics, steps = attempt_metrics(record)
        metrics.update(usage)
        params = {"trainer": record.candidate.trainer, **record.params}
        tags = {**attempt_tags(record), **usage_tags, **record.tags}
        if record.failed:
            tags["error"] = record.error or ""
        if record.pruned is not None:  # partial folds: logged, never as the CV score
            tags["pruned"] = "true"
            steps[f"partial_{record.metric}_fold"] = record.fold_scores
        files = dict(record.artifacts)  # code mode: candidate.py, plan, critic
        script = self.script(record)
        if script is not None:
            files["attempt.py"] = script
        for name, text in files.items():
            path = self.opened.journal.file_for(f"attempt-{record.index}", name)
            path.write_text(text)
            self._journaled(record.index, "outputs", file=str(path),
                            folder=str(Path(name).parent) if "/" in name else None)
        self._journaled(record.index, "end", ts=_now_ms(), metrics=metrics,
                        params={k: recorded_value(v) for k, v in params.items()},
                        tags={k: str(v)[:TAG_MAX] for k, v in tags.items()}, steps=steps,
                        traceback=record.traceback if record.failed else None,
                        status="FAILED" if record.failed else "FINISHED", end_ms=_now_ms())

    def script(self, record: AttemptRecord) -> str | None:
        """``attempt.py``: the attempt as a script a user can rerun (``engine.script``)."""
        from mlflow_agentic.engine.after.script import attempt_script

        context = self.search.context
        recipe = getattr(context.briefing, "recipe", None) or {}
        try:
            return attempt_script(record, context.dataset, recipe, self.members,
                                  search=self.search.run_id,
                                  n_splits=context.n_splits, seed=context.search.seed)
        except Exception:  # noqa: BLE001 - a script is a courtesy: it never fails the attempt
            return None

    def llm_call(self, exchange) -> None:
        s = self.search
        self.llm.add(exchange, self.opened.conn.store, s.context.proposer_name, s.run_id,
                     s.experiment_id)

    def _journaled(self, index: int, op: str, **fields) -> None:
        """A record of attempt ``index``: on disk now, to the store on the writer's thread."""
        record = self.opened.journal.append(op, ref=f"attempt:{index}", **fields)
        self.writer.submit(self._send, index, record)

    def _journal_trace(self, call: int, trace: dict, tried: list) -> None:
        record = self.opened.journal.append("trace", ref=f"call:{call}", trace=trace, tried=tried)
        self.writer.submit(self._send, call, record)

    def _send(self, index: int, record: dict) -> None:
        run_id = send(self.opened.conn.store, self.opened.conn.sending, self.opened.journal, record)
        self.opened.journal.mark_done(record, run_id)
        if record["op"] == "create_run" and run_id is not None:
            self.open.add(index)
            self.child_run_ids[index] = run_id
        elif record["op"] == "end":
            self.open.discard(index)
            self.ended.append(index)
        elif record["op"] == "trace" and run_id is not None:  # the trace's id: it arrived
            self.late_traces += 1

    def drain(self) -> None:
        """Wait for the writer to send every record; with the store still down after the retry
        window, stop: what is not in the store stays in the journal (``flush`` sends it)."""
        if not self.writer.flush(timeout=1.0):
            window = self.opened.conn.retrying.window
            self.say(f"the search is done; waiting up to {window:.0f}s for the tracking store "
                     f"to take its last {len(self.opened.journal.pending())} record(s) (kept in "
                     f"{self.opened.journal.path})")
            if not self.writer.flush(timeout=window):
                self.stop_sending()
                raise TrackingUnavailable(
                    f"the tracking store {self.opened.conn.retrying.uri} did not answer for "
                    f"{window:.0f}s after the search ended. Recorded there: {self.recorded()}. "
                    f"Nothing was registered; {self.next_step()}")
        self.opened.journal.remove()
        if self.late_traces:
            self.say(f"sent the traces of {self.late_traces} LLM call(s) made while the "
                     "tracking store was down")

    def stop_sending(self) -> None:
        """The store is judged down: no more waiting on it, the journal keeps the rest."""
        self.opened.conn.sending.stop()
        self.opened.conn.retrying.down = True
        self.writer.flush(raise_error=False, timeout=10.0)

    def next_step(self) -> str:
        pending = self.journal.pending() if self.journal is not None else []
        if not pending:
            return AGAIN
        return (f"when the store is back, send what waits in the journal "
                f"({self.opened.journal.flush_command()}), then finish the search: "
                f"{self.opened.journal.resume_command()}")

    def mark_ranks(self, run: EngineeringRun) -> None:
        """``rank`` (CV leaderboard position) and ``selected`` on every attempt's run, so the
        runs table sorts and filters by them (``tags.selected = 'true'``)."""
        best = run.best_attempt
        for rank, a in enumerate(run.leaderboard(), start=1):
            run_id = self.child_run_ids.get(a.index)
            if run_id is None:
                continue
            tags = {"rank": str(rank),
                    "selected": str(best is not None and a.index == best.index).lower()}
            if run.tied(a):
                tags["tie"] = "true"  # the window is in the search run's description
            self.opened.conn.log(run_id, {}, {}, tags)

    def recorded(self) -> str:
        """What the store holds of this search, for messages after a failure."""
        if not self.search.run_id:
            return ""
        done = self.ended
        attempts = (f"{len(done)} finished attempt{'s' if len(done) != 1 else ''} "
                    f"({_ranges(done)})" if done else "no finished attempt")
        waiting, cut = self.journal.pending_attempts() if self.journal is not None else ([], [])
        journaled = (f"; the records of finished attempt(s) {_ranges(waiting)} wait in the "
                     f"journal {self.opened.journal.path}" if waiting else "")
        if cut:  # started, its end never written: a resume marks it KILLED and runs it again
            journaled += f"; attempt(s) {_ranges(cut)} were cut"
        return f"search run {self.search.run_id} with {attempts}{journaled}"


def attempt_metrics(record: AttemptRecord) -> tuple[dict, dict]:
    """An attempt's metrics (CV rounded for reading; the folds keep every decimal) and its
    per-fold steps."""
    m = record.metric
    metrics = {"fit_seconds": round(record.fit_seconds, 2),
               "attempt_seconds": round(record.seconds, 2),
               "finished_at_search_seconds": record.elapsed}
    steps: dict[str, tuple[float, ...]] = {}
    if not record.failed and record.pruned is None:
        metrics[f"cv_{m}"] = ev.shown(record.score)
        metrics[f"cv_{m}_std"] = ev.shown(record.score_std)
        steps[f"cv_{m}_fold"] = record.fold_scores
    return metrics, steps


def attempt_tags(record: AttemptRecord) -> dict[str, str]:
    """The verdict, where the candidate came from and why, and the run's note."""
    status = record.status
    return {
        "trainer": record.candidate.trainer, "verdict": status,
        "verdict.valid": str(record.verdict.valid).lower(),
        "verdict.reason": record.verdict.reason, "proposer": record.proposer,
        "proposal_source": record.candidate.source or record.phase,
        "rationale": record.candidate.rationale or "-", "attempt.phase": record.phase,
        "mlflow.note.content": (f"**{status}**: {record.verdict.reason}\n\n"
                                f"Rationale: {record.candidate.rationale or '-'}"),
    }


def _ranges(indices: list[int]) -> str:
    """[1, 2, 3, 5] -> "1-3, 5"."""
    spans: list[list[int]] = []
    for i in sorted(indices):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)


def _now_ms() -> int:
    return int(time.time() * 1000)
