"""Cross-validate a batch of candidates: every fold of every candidate is one task on the worker
pool; results are released in proposal order; a candidate clearly behind is pruned fold by fold;
a spent time budget cuts what is still running.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import clone

from mlflow_agentic.core.metrics import Metric
from mlflow_agentic.core.types import TIME_CUT, is_classification
from mlflow_agentic.engine.evaluate.folds import (
    FoldData,
    FoldMatrices,
    FoldOutput,
    fit_fold,
    score_output,
)
from mlflow_agentic.engine.evaluate.outcome import Outcome, Planned
from mlflow_agentic.engine.workers.parallel import WorkerPool, single_threaded

if TYPE_CHECKING:
    from mlflow_agentic.engine.evaluate.pruning import FoldPruner
    from mlflow_agentic.sandbox.runners import Sandbox


class _State:
    def __init__(self) -> None:
        self.results: dict[int, FoldOutput] = {}
        self.next_fold = 0
        self.done = False
        self.outcome = Outcome()
        self.futures: list = []
        self.trial: Any = None


class BatchRunner:
    """Runs batches on ``pool`` against fixed ``folds``; ``pruner`` may be None."""

    def __init__(self, folds: FoldData, pool: WorkerPool, metric: Metric,
                 pruner: FoldPruner | None = None, random_state: int = 0,
                 sandbox: Sandbox | None = None) -> None:
        self.folds = folds
        self.sandbox = sandbox
        """Where code-mode candidates run (``sandbox.DockerSandbox`` or ``HostSandbox``)."""
        self.pool = pool
        self.metric = metric
        self.pruner = pruner
        self.random_state = random_state
        ds = folds.dataset
        self.classes = tuple(ds.classes)
        self.classification = is_classification(ds.task)

    def run(self, batch: list[Planned], deadline: float | None,
            on_done: Callable[[int, Outcome], None],
            on_submitted: Callable[[], None] | None = None) -> None:
        """Evaluate ``batch``; ``on_done(i, outcome)`` is called in batch order.
        ``on_submitted()`` runs once the folds are on the workers (tracking overlaps them)."""
        started = time.perf_counter()
        states = [_State() for _ in batch]
        # every fold of every style this batch needs, in parallel, once per search; an error
        # is left to each candidate below, so it lands on that candidate's record
        with contextlib.suppress(Exception):
            self.folds.prepare([p.style for p in batch
                                if p.style and p.error is None and p.restored is None],
                               self.pool, deadline)
        spent = deadline is not None and time.perf_counter() >= deadline
        ready = [(i, *built) for i, plan in enumerate(batch)
                 if (built := self._build(plan, states[i], spent)) is not None]
        # candidate-major order (A1..A5 B1..B5), in proposal order (the seeds: cheap first): when
        # a time budget cuts a batch, the candidates that finished are whole ones
        tasks: list[tuple[int, int]] = []
        futures = []
        for i, model, matrices in ready:
            for k in range(self.folds.n_splits):
                future = self.pool.submit(fit_fold, clone(model), matrices[k], self.classes,
                                          self.classification,
                                          self.folds.model_file(batch[i].index, k))
                states[i].futures.append(future)
                futures.append(future)
                tasks.append((i, k))
        if on_submitted is not None:
            on_submitted()
        released = self._release(batch, states, 0, started, on_done)
        if all(s.done for s in states):
            return self._finish(states)
        # (-1, None) from in_order: the deadline passed while folds were still fitting
        for t, finished in self.pool.in_order(futures, deadline):
            if finished is not None:
                state = states[tasks[t][0]]
                if not state.done and not finished.cancelled():
                    self._take(state, tasks[t][1], finished)
            spent = deadline is not None and time.perf_counter() >= deadline
            if spent and self._cut(states, TIME_CUT):
                # folds still running would delay the refit: stop them all
                self.pool.abort([f for s in states for f in s.futures])
            released = self._release(batch, states, released, started, on_done)
            if released == len(batch):
                break
        self._finish(states)

    def _build(self, plan: Planned, state: _State,
               spent: bool = False) -> tuple[Any, list[FoldMatrices]] | None:
        """``(model, fold matrices)`` for a candidate whose folds run on the workers; None
        when its outcome is already known (restored, failed to build, code mode's, which
        runs its own folds in the sandbox, or cut: the time budget was ``spent`` before its
        folds were preprocessed or its sandbox run started)."""
        if plan.restored is not None:
            self._restore(state, plan.restored)
            return None
        if plan.error is not None:
            state.outcome.error, state.outcome.traceback = plan.error, plan.traceback
            state.done = True
            return None
        if spent and (plan.code is not None or not self.folds.prepared(plan.style)):
            before = ("its sandbox run started" if plan.code is not None
                      else "its folds were preprocessed")
            state.outcome.pruned = (f"{TIME_CUT} before {before} (0 of "
                                    f"{self.folds.n_splits} folds)")
            state.done = True
            return None
        if plan.code is not None:  # its own process does its folds, in the sandbox
            state.outcome, state.done = self.run_code(plan), True
            return None
        try:
            model = single_threaded(plan.trainer.model(self.folds.dataset, plan.params,
                                                      self.random_state))
            matrices = self.folds.matrices(plan.trainer.preprocessing)
        except Exception as exc:
            state.outcome.error = f"{type(exc).__name__}: {exc}"
            state.outcome.traceback = traceback.format_exc()
            state.done = True
            return None
        if self.pruner is not None:
            state.trial = self.pruner.trial()
        return model, matrices

    def run_code(self, plan: Planned) -> Outcome:
        """A code candidate's folds, each in its own sandbox container; scored here."""
        from mlflow_agentic.engine.evaluate.code import dropped_columns, evaluate_code

        started = time.perf_counter()
        try:
            assert plan.code is not None
            outcome, result = evaluate_code(self.sandbox, self.folds.dataset, self.folds.splits,
                                            self.metric, plan.code,
                                            dropped_columns(plan.candidate),
                                            parallel=self.pool.n_jobs)
        except Exception as exc:  # the sandbox itself failed: this attempt's error
            return Outcome(error=f"sandbox: {type(exc).__name__}: {exc}",
                           traceback=traceback.format_exc(),
                           seconds=time.perf_counter() - started)
        outcome.sandbox = result
        return outcome

    # ---- per result -------------------------------------------------------------------------
    def _restore(self, state: _State, outcome: Outcome) -> None:
        """A finished attempt of a resumed search: its outcome as recorded, and the pruner told
        what it saw then (the running mean at every fold but the last), so the attempts after
        it are pruned exactly as in the search that was killed."""
        state.outcome, state.done = outcome, True
        if self.pruner is None or not outcome.complete:
            return  # the pruner's threshold reads completed trials only
        state.trial = self.pruner.trial()
        for k in range(len(outcome.fold_scores) - 1):
            running = self.metric.utility(float(np.mean(outcome.fold_scores[: k + 1])))
            self.pruner.should_prune(state.trial, k, running)  # reports it; no decision taken

    def _take(self, state: _State, k: int, future: Future) -> None:
        out = state.outcome
        try:
            state.results[k] = future.result()
        except Exception as exc:  # a fold that raised fails the candidate (recorded as data)
            out.error = f"{type(exc).__name__}: {exc}"
            out.traceback = "".join(traceback.format_exception(exc))
            self._stop(state)
            return
        n = self.folds.n_splits
        while state.next_fold in state.results and not state.done:
            fold = state.results[state.next_fold]
            _, test = self.folds.splits[state.next_fold]
            out.fit_seconds += fold.fit_seconds
            out.fold_scores.append(float(score_output(self.metric, self.folds.y[test], fold.test,
                                                      self.classes)))
            state.next_fold += 1
            if state.next_fold == n:
                state.done = True
                self._assemble(state)
            elif state.trial is not None and self.pruner is not None:
                running = self.metric.utility(float(np.mean(out.fold_scores)))
                if self.pruner.should_prune(state.trial, state.next_fold - 1, running):
                    mean = float(np.mean(out.fold_scores))
                    out.pruned = (f"pruned after {state.next_fold} of {n} folds: running "
                                  f"{self.metric.name} {mean:.4f} is clearly behind (below the "
                                  f"{self.pruner.percentile:g}th percentile of earlier attempts "
                                  "at that fold by more than a standard error)")
                    self._stop(state)

    def _assemble(self, state: _State) -> None:
        """Out-of-fold output over all rows, and the fold models' mean on the extra rows."""
        first = state.results[0].test
        n_rows = len(self.folds.y)
        oof = np.zeros((n_rows,) + first.shape[1:])
        for k, (_, test) in enumerate(self.folds.splits):
            oof[test] = state.results[k].test
        state.outcome.oof = oof
        extras = [state.results[k].extra for k in range(self.folds.n_splits)]
        held = [extra for extra in extras if extra is not None]
        if held and len(held) == len(extras):
            state.outcome.extra = np.mean(np.stack(held), axis=0)
        state.results = {}

    @staticmethod
    def _stop(state: _State) -> None:
        state.done = True
        state.results = {}
        for future in state.futures:
            future.cancel()

    def _cut(self, states: list[_State], why: str) -> bool:
        """Stop every unfinished candidate; True if there was one."""
        n = self.folds.n_splits
        cut = False
        for state in states:
            if not state.done:
                state.outcome.pruned = (f"{why} after {len(state.outcome.fold_scores)} of {n} "
                                        "folds")
                state.done, state.results = True, {}
                cut = True
        return cut

    @staticmethod
    def _release(batch: Sequence[Planned], states: list[_State], released: int, started: float,
                 on_done: Callable[..., Any]) -> int:
        while released < len(batch) and states[released].done:
            if batch[released].restored is None:
                states[released].outcome.seconds = time.perf_counter() - started
            on_done(released, states[released].outcome)
            released += 1
        return released

    def _finish(self, states: list[_State]) -> None:
        """Tell the pruner every result of the batch, in order (after the whole batch)."""
        if self.pruner is None:
            return
        for state in states:
            if state.trial is None:
                continue
            out = state.outcome
            utility = spread = None
            if out.complete:
                utility = self.metric.utility(float(np.mean(out.fold_scores)))
                spread = float(np.std(out.fold_scores))
            self.pruner.tell(state.trial, utility, pruned=out.pruned is not None,
                             fold_std=spread)
