"""``finalize``: end a scaled-out search once, after its workers (``mlflow-agentic finalize``).

It reads every finished attempt back from the shared search run (``tracking.resume``), in the
study's trial order, and resumes the search with exactly those attempts: nothing is fitted
again. Then, as in any search: the ensemble of the verified attempts, the selection, the refit,
the sealed holdout, and one registered model version.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.settings import shared_by_workers
from mlflow_agentic.core.types import SolutionCandidate
from mlflow_agentic.distributed.study import SharedStudy, grace_seconds, open_storage
from mlflow_agentic.frontdoor.orchestrator import SearchResult, SplitOptions
from mlflow_agentic.proposers.sequence import SequenceProposer
from mlflow_agentic.tracking.store import check_store

if TYPE_CHECKING:
    from mlflow_agentic.core.tracker import Tracker


def finalize(data: Any, *, study: str, storage: str, tracking_uri: str | None = None,
             register_name: str | None = None, register: bool = True,
             diagnostics: bool = True, selection: str = "best", n_jobs: int | None = None,
             encoding: str | None = None, observers: Sequence = (),
             tracker: Tracker | None = None,
             say: Callable[[str], None] | None = None) -> SearchResult:
    """Select, refit, score on the holdout and register the search of study ``study``. ``data``
    must be the workers' file (its training rows are checked against the study's)."""
    from mlflow_agentic.frontdoor.api import search
    from mlflow_agentic.tracking.resume import read_search

    shared = SharedStudy(study, open_storage(storage), storage)
    shared.open(create=False)
    agreed, run_id = shared.settings(), shared.run_id(timeout=5)
    running = shared.running_trials()
    if running:
        raise UserInputError(
            f"study {study!r} has {len(running)} trial(s) still running "
            f"({', '.join(str(t.number) for t in running[:5])}): its workers are at work. "
            f"Finalize when they are done (a worker that died has its trial failed "
            f"{grace_seconds()}s after its last heartbeat)")
    uri = check_store(tracking_uri)
    point = read_search(run_id, uri, finalizing=True)
    if not point.attempts:
        raise UserInputError(f"search run {run_id} of study {study!r} has no finished attempt "
                             "to finalize; run workers first")
    ordered = [point.attempts[i] for i in sorted(point.attempts)]  # trial order
    point.attempts = dict(enumerate(ordered, start=1))
    candidates = [SolutionCandidate(r.trainer, {k: _typed(v) for k, v in r.params.items()},
                                    f"run by a worker of study {study!r} (run {r.run_id})")
                  for r in ordered]
    return search(
        data, agreed["target"], proposer=lambda: SequenceProposer(candidates),
        **{name: agreed[name] for name in shared_by_workers()},
        max_iterations=len(candidates) - 1, patience=len(candidates), n_jobs=n_jobs,
        ensemble=True, selection=selection, split=SplitOptions(**agreed["split"]),
        keep_flagged_columns=agreed["keep_flagged_columns"], register_name=register_name,
        register=register, diagnostics=diagnostics, tracking_uri=tracking_uri,
        encoding=encoding, resume=point, observers=observers, tracker=tracker, say=say)


def _typed(value: str) -> Any:
    """A recorded parameter back as the value it was (``0.1``, ``None``, ``True``, text)."""
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value
