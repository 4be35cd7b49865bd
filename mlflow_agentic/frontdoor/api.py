"""``search(...)``: the one front door, in Python and behind ``mlflow-agentic run``.

It is the honest search end to end: the file read and checked, the tracking store checked,
the holdout sealed before any proposer exists, the briefing (profile, leakage findings, CV
advice), the search, every attempt scored on the holdout, and the verified best logged and
registered in MLflow with its evidence. Its settings become one ``SearchSettings`` (declared and
validated in ``core.settings``); the CLI only parses flags into these arguments.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.metrics import resolve_metric
from mlflow_agentic.core.observer import Observers
from mlflow_agentic.core.settings import SearchSettings, TrackingOptions
from mlflow_agentic.core.tracker import Tracker
from mlflow_agentic.data import Dataset
from mlflow_agentic.frontdoor.orchestrator import SearchResult, SplitOptions, run_search
from mlflow_agentic.proposers.factory import (
    CodeOptions,
    LLMOptions,
    build_proposer,
    check_llm_endpoint,
    load_candidates,
)
from mlflow_agentic.tracking.live import tracker_for
from mlflow_agentic.tracking.resume import LAST, last_unfinished
from mlflow_agentic.tracking.store import (
    check_experiment_live,
    check_names,
    check_project_run,
    check_store,
)
from mlflow_agentic.trainers import resolve_trainers

if TYPE_CHECKING:
    import pandas as pd

    from mlflow_agentic.core.protocol import CandidateProposer
    from mlflow_agentic.tracking.resume import ResumePoint


def search(
    data: Any,
    target: str | None = None,
    *,
    settings: SearchSettings | None = None,
    tracking: TrackingOptions | None = None,
    proposer: str | Callable[[], Any] = "optuna",
    split: SplitOptions | None = None,
    keep_flagged_columns: bool = False,
    llm: LLMOptions | None = None,
    code: CodeOptions | None = None,
    candidates: str | None = None,
    optuna_storage: str | None = None,
    encoding: str | None = None,
    merge_label_variants: bool = False,
    task: str | None = None,
    resume: str | ResumePoint | None = None,
    observers: Sequence[Any] = (),
    tracker: Tracker | None = None,
    started: float | None = None,
    say: Callable[[str], None] | None = None,
    **overrides: Any,
) -> SearchResult:
    """Search ``data`` (a CSV/Parquet path, a DataFrame or a ``Dataset``) for a verified
    model, tracked in MLflow; returns a ``SearchResult`` (the run, the briefing, the holdout
    report, and where MLflow has it: ``run_id``, ``model_uri``, ``model_version``).

    How it runs is one ``SearchSettings`` and where it is recorded one ``TrackingOptions``:
    ``settings`` and ``tracking``, or their fields as keyword ``overrides`` (an unknown name is
    refused with the closest). ``proposer``: ``optuna``, ``random``, ``sequence``, ``llm``,
    ``code``, or a zero-argument callable returning a proposer (called after the holdout is
    sealed). ``task``: binary, multiclass or regression, when inference would read the target
    otherwise. ``resume``: a killed search's run id, or ``"last"``. Bad input raises
    ``UserInputError`` before anything is logged. The docs' Python guide has every option."""
    code = code or CodeOptions()
    tracking = TrackingOptions.taken_from(tracking, overrides)
    if proposer == "code":
        _code_mode(code, overrides)
    started = time.perf_counter() if started is None else started
    settings = SearchSettings.budgeted(settings, **overrides)  # validated here, once
    say = say or _warn
    if isinstance(data, (str, Path)):
        Observers(observers).phase(f"reading {data}")
    dataset = _read(data, target, encoding, merge_label_variants, settings, say, task)
    settings = settings.replace(trainers=resolve_trainers(settings.trainers, dataset.task))
    llm = llm or LLMOptions()
    make_with = _proposer_factory(proposer, candidates, llm, code, settings, dataset,
                                  optuna_storage)
    check_names(register_name=tracking.register_name, experiment=tracking.experiment,
                dataset_name=dataset.name, register=tracking.register != "never")
    sandbox = code.sandbox() if proposer == "code" else None  # fail closed, before logging
    tracker = _tracker(tracker, tracking, dataset, resume, say)
    if tracker.resume is not None:
        # an LLM search's recorded calls are answered from its traces, not asked again
        llm = dataclasses.replace(llm, resumed=tracker.resume.llm_calls)
    result = run_search(dataset, lambda: make_with(llm), settings, split=split,
                        keep_flagged_columns=keep_flagged_columns, tracker=tracker,
                        observers=observers, started=started, sandbox=sandbox,
                        restored=tracker.resume.attempts if tracker.resume else None)
    return result.tracked(tracker)


def _code_mode(code: CodeOptions, overrides: dict) -> None:
    """Code mode's budget: each attempt is one experiment; no ensemble (its attempts refit in
    the sandbox)."""
    for name in ("max_iterations", "patience"):
        if overrides.get(name) is None:
            overrides[name] = code.max_experiments
    overrides["ensemble"] = False


def _tracker(tracker: Tracker | None, tracking: TrackingOptions, dataset: Dataset,
             resume: str | ResumePoint | None, say: Callable[[str], None]) -> Tracker:
    """The tracker (made from ``tracking`` unless given), after the store is checked (a store
    we cannot use is the user's to fix, first); with ``resume``, the killed search it
    continues, read back before anything is sealed or logged."""
    uri = check_store(tracking.tracking_uri)
    check_project_run(uri)
    check_experiment_live(uri, tracking.experiment or f"{dataset.name}-agentic")
    if tracker is None:
        tracker = tracker_for(tracking, say)
    if resume == LAST:  # the latest unfinished search of this experiment on this file
        resume = last_unfinished(uri, tracking.experiment or f"{dataset.name}-agentic",
                                 dataset.name)
        say(f"--resume last: search run {resume}")
    if resume:
        tracker.continue_search(_resume_point(resume, uri, say))
    return tracker


def _read(data: Any, target: str | None, encoding: str | None, merge_label_variants: bool,
          settings: SearchSettings, say: Callable[[str], None],
          task: str | None = None) -> Dataset:
    """The data, read and checked, with what was noticed said; the metric checked against its
    task (before anything is logged)."""
    dataset = load_dataset(data, target, encoding, merge_label_variants, task)
    for note in dataset.notes:
        say(f"note: {note}")
    size = size_note(dataset, settings.time_budget)
    if size:
        say(size)
    resolve_metric(settings.metric, dataset.task)
    return dataset


def _proposer_factory(proposer: str | Callable[[], Any], candidates: str | None,
                      llm: LLMOptions, code: CodeOptions, settings: SearchSettings,
                      dataset: Dataset, optuna_storage: str | None,
                      ) -> Callable[[LLMOptions], CandidateProposer]:
    """``make(llm)``: the proposer, built only after the holdout is sealed. What can be
    checked now is (an endpoint that does not answer, a bad candidates or portfolio file:
    before sealing; a fixed list knows nothing of the rows)."""
    if callable(proposer):
        return lambda _llm: proposer()
    if candidates and proposer != "sequence":
        raise UserInputError("candidates only apply to the sequence proposer")
    if proposer in ("llm", "code") and llm.recording is None:
        from mlflow_agentic.llm.client import LLMConfig
        from mlflow_agentic.llm.pricing import check_priced

        check_priced(LLMConfig(llm.model, llm.base_url).resolved().model or "",
                     llm.max_cost_usd)
        check_llm_endpoint(llm, "Start the server (or pass --llm-base-url), use another "
                           "--proposer, or replay an earlier search with --replay RUN_ID",
                           proposer)
    trainers = list(settings.trainers or ())
    listed = load_candidates(candidates, trainers, dataset) if candidates else None
    if proposer == "optuna":  # a bad portfolio file: refused before anything is logged
        from mlflow_agentic.trainers.portfolio import starts

        starts(settings.portfolio, dataset, trainers)

    def make(llm: LLMOptions) -> CandidateProposer:
        if listed is not None:
            return listed
        return build_proposer(proposer, seed=settings.seed, trainers=trainers,
                              dataset=dataset, optuna_storage=optuna_storage, llm=llm,
                              code=code, portfolio=settings.portfolio)

    return make


def _resume_point(run_id: str | ResumePoint, uri: str,
                  say: Callable[[str], None]) -> ResumePoint:
    """The killed search ``run_id``, read back (or a ``ResumePoint`` already read); refused
    before anything is sealed or logged."""
    import os

    from mlflow_agentic.tracking.resume import ResumePoint, read_search

    if isinstance(run_id, ResumePoint):
        return run_id
    if os.environ.get("MLFLOW_RUN_ID"):
        raise UserInputError("--resume continues the search in its own run, which `mlflow run` "
                             "cannot reopen; resume with mlflow-agentic run ... --resume "
                             f"{run_id}")
    return read_search(run_id, uri, say=say)


LARGE_CELLS = 5_000_000
"""Rows x columns from which a search says up front what the data's size means."""


def size_note(dataset: Dataset, time_budget: float | None) -> str:
    """For a large file: its size and memory, and what the search does about it ('' else)."""
    rows, columns = dataset.frame.shape
    if rows * columns < LARGE_CELLS:
        return ""
    mb = dataset.frame.memory_usage(deep=True).sum() / 2**20
    what = ("folds still fitting when --time-budget runs out are stopped, and the best "
            "attempt so far is refit and registered" if time_budget is not None else
            "without --time-budget every attempt fits all its folds, which can take long: "
            "pass --time-budget SECONDS to bound the whole command")
    return (f"note: large data: {rows:,} rows x {columns:,} columns ({mb:,.0f} MB in memory; "
            f"each fold worker holds about 3x its share); workers are limited to what fits in "
            f"memory; {what}")


def _warn(line: str) -> None:
    warnings.warn(line, stacklevel=3)


def load_dataset(data: Any, target: str | None, encoding: str | None = None,
                 merge_label_variants: bool = False, task: str | None = None) -> Dataset:
    """``data`` (a path, a DataFrame or a ``Dataset``) as a checked ``Dataset``; ``task``
    (binary, multiclass, regression; default: inferred from the target) for a target the
    inference would read otherwise (scores 0-10 as classes)."""
    import pandas as pd

    if isinstance(data, Dataset):
        if target is not None and target != data.target:
            raise UserInputError(f"target {target!r} differs from the dataset's {data.target!r}")
        return data
    if isinstance(data, pd.DataFrame):
        if data.columns.nlevels > 1:
            raise UserInputError(
                f"the DataFrame has {data.columns.nlevels}-level (MultiIndex) column names; "
                "give it one level, e.g. frame.columns = ['_'.join(map(str, c)) for c in "
                "frame.columns]")
        return Dataset.from_frame(data, target, merge_label_variants=merge_label_variants,
                                  name=frame_name(data, target), task=task)
    if isinstance(data, (str, Path)):
        return Dataset.from_path(data, target, encoding=encoding, task=task,
                                 merge_label_variants=merge_label_variants)
    raise UserInputError(f"data must be a CSV/Parquet path, a DataFrame or a Dataset, got "
                         f"{type(data).__name__}")


def frame_name(frame: pd.DataFrame, target: str | None) -> str:
    """A DataFrame's name in MLflow (it has no file name): its target and a digest of its
    column names, so an unrelated frame never lands on another frame's model or alias. Pass
    ``register_name`` / ``experiment`` to choose."""
    import hashlib
    import re

    columns = "\x00".join(map(str, frame.columns))
    digest = hashlib.sha256(columns.encode()).hexdigest()[:8]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(target or "frame")).strip("-")[:40] or "frame"
    return f"frame-{stem}-{digest}"
