"""Run a comparison: per dataset, seal one holdout and one set of CV folds, then search it with
every proposer x seed on the same budget, score all on the same holdout, and report.

Fairness by construction: the arms share the ``SealedTask`` (training rows, findings,
exclusions, holdout), the fold indices (``FixedSplits``), one verifier and one budget; no arm
stops early (no patience), so each spends the whole budget unless its proposer runs dry.
"""

from __future__ import annotations

import math
import shutil
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow_agentic.compare.plots import plot_best_so_far, plot_cv_vs_holdout
from mlflow_agentic.compare.report import (
    PLOTS,
    DatasetReport,
    dataset_html,
    dataset_markdown,
    grid_html,
    grid_markdown,
    page,
    ranking_grid,
)
from mlflow_agentic.compare.table import Arm, aggregate, arm_from_search, summarize
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.metrics import resolve_metric
from mlflow_agentic.core.settings import SearchSettings
from mlflow_agentic.engine.evaluate.cv import FixedSplits, make_splits
from mlflow_agentic.frontdoor.orchestrator import SealedTask, SplitOptions, seal, search_sealed
from mlflow_agentic.proposers.factory import PROPOSERS, LLMOptions, build_proposer
from mlflow_agentic.tracking import MlflowTracker
from mlflow_agentic.tracking.registry import load_llm_recording
from mlflow_agentic.tracking.results import TAG_ID as TAG
from mlflow_agentic.tracking.results import (
    TAG_SEED,
    ComparisonTracker,
    find_llm_recordings,
    temporary_directory,
    write_json,
)
from mlflow_agentic.trainers import resolve_trainers
from mlflow_agentic.verify import DeterministicVerifier

if TYPE_CHECKING:
    from mlflow_agentic.core.protocol import CandidateProposer
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.frontdoor.briefing import Briefing
    from mlflow_agentic.tracking.results import ComparisonTracker

DEFAULT_BUDGET = 30


@dataclass
class CompareOptions:
    """What every arm shares (budget, splits, verifier) and what varies (proposers, seeds)."""

    proposers: Sequence[str] = ("llm", "optuna", "sequence", "random")
    seeds: Sequence[int] = (1, 2, 3)
    budget_attempts: int | None = None
    """Attempts per arm, seeds included (default 30 when no time budget is given)."""
    settings: SearchSettings | None = None
    """What every arm shares, declared once in ``SearchSettings``: ``cv``, ``cv_scheme``,
    ``metric``, ``trainers``, ``margin``, and ``time_budget`` (wall seconds per arm, proposal
    time included). The arms' own budget, early stopping and ensemble are set here."""
    split: SplitOptions = field(default_factory=SplitOptions)
    split_seed: int = 0
    """Seeds the sealed holdout and the CV folds, which every arm shares."""
    keep_flagged_columns: bool = False
    candidates: str | None = None
    llm: LLMOptions = field(default_factory=LLMOptions)
    llm_replay: str | None = None
    """A previous comparison id: the LLM arms replay its recorded answers, seed by seed."""

    def __post_init__(self) -> None:
        self.proposers = list(dict.fromkeys(self.proposers))
        unknown = [p for p in self.proposers if p not in PROPOSERS]
        if unknown or not self.proposers:
            raise UserInputError(f"unknown proposer(s) {', '.join(unknown) or '(none given)'}; "
                                 f"choose from {', '.join(PROPOSERS)}")
        self.seeds = list(dict.fromkeys(int(s) for s in self.seeds))
        if not self.seeds:
            raise UserInputError("give at least one seed, e.g. --seeds 1,2,3")
        base = self.settings or SearchSettings()
        if self.budget_attempts is None and base.time_budget is None:
            self.budget_attempts = DEFAULT_BUDGET
        # one arm's search: no early stopping (the same budget for every proposer), no
        # ensemble (the proposer's own candidates are judged); checked once, where declared
        self.settings = base.replace(max_iterations=None, patience=None,
                                     max_attempts=self.budget_attempts, ensemble=False)

    def arm_settings(self, seed: int = 0, cv: Any = None,
                     trainers: Sequence[str] | None = None) -> SearchSettings:
        """One arm's settings: its seed, the shared folds and the trainers of the dataset."""
        assert self.settings is not None, "set in __post_init__"
        return self.settings.replace(seed=seed, cv=self.cv if cv is None else cv,
                                     trainers=trainers)

    cv = property(lambda self: self.settings.cv)
    cv_scheme = property(lambda self: self.settings.cv_scheme)
    metric = property(lambda self: self.settings.metric)
    trainers = property(lambda self: self.settings.trainers)
    margin = property(lambda self: self.settings.margin)
    time_budget = property(lambda self: self.settings.time_budget)

    def budget_text(self) -> str:
        parts = []
        if self.budget_attempts is not None:
            parts.append(f"{self.budget_attempts} attempts")
        if self.time_budget is not None:
            parts.append(f"{self.time_budget:g} s wall time (proposal time included)")
        return " or ".join(parts) + " per proposer and seed, no early stopping"


@dataclass
class ComparisonResult:
    comparison_id: str
    reports: list  # DatasetReport per dataset
    ranking: list[dict] | None = None
    """Across datasets (only with more than one)."""
    run_id: str = ""
    """The outermost comparison run."""


def new_comparison_id() -> str:
    return f"cmp-{uuid.uuid4().hex[:8]}"


def compare(datasets: Sequence, options: CompareOptions, *,
            tracker: ComparisonTracker | None = None,
            progress: Callable[[str], None] | None = None, observers: Sequence[Any] = (),
            output: str | Path | None = None, comparison_id: str | None = None
            ) -> ComparisonResult:
    """Compare ``options.proposers`` on each dataset; log everything through ``tracker`` (a
    ``ComparisonTracker``). ``observers`` are added to every arm's search (progress)."""
    tracker = tracker or ComparisonTracker()
    say = progress or (lambda msg: None)
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        raise UserInputError(f"two datasets share a name ({', '.join(names)}): rename a file")
    plan = []
    for dataset in datasets:  # check everything before any run is created
        resolve_metric(options.metric, dataset.task)
        plan.append((dataset, resolve_trainers(options.trainers, dataset.task)))
    recordings = _llm_recordings(options, names, tracker) if "llm" in options.proposers else {}
    comparison_id = comparison_id or new_comparison_id()
    result = ComparisonResult(comparison_id, [])
    several = len(datasets) > 1
    if several:
        result.run_id = tracker.start(
            f"compare-{len(datasets)}-datasets",
            {"agentic.role": "comparison-ranking", TAG: comparison_id},
            {"datasets": ",".join(names), **_shared_params(options)})
    status = "FAILED"
    try:
        for dataset, trainers in plan:
            report = _compare_one(dataset, trainers, options, tracker, comparison_id,
                                  recordings.get(dataset.name, {}), say, observers, output)
            result.reports.append(report)
            result.run_id = result.run_id or report.run_id
        if several:
            result.ranking = aggregate({r.dataset: (r.summary, r.greater_is_better)
                                        for r in result.reports})
            _log_ranking(tracker, result, output)
        status = "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    finally:
        if several:
            tracker.end(status)
    return result


def _shared_params(options: CompareOptions) -> dict:
    params = {"proposers": ",".join(options.proposers),
              "seeds": ",".join(map(str, options.seeds)), "split_seed": options.split_seed,
              "cv_folds": options.cv, "verifier_margin": options.margin,
              "budget_attempts": options.budget_attempts or "none",
              "budget_seconds": options.time_budget or "none"}
    if options.llm_replay:
        params["llm_replay"] = options.llm_replay
    return params


def _compare_one(dataset: Dataset, trainers: Sequence[str], options: CompareOptions,
                 tracker: ComparisonTracker, comparison_id: str,
                 recordings: dict[int, list[dict]], say: Callable[[str], None],
                 observers: Sequence[Any], output: str | Path | None) -> DatasetReport:
    task: SealedTask = seal(dataset, split=options.split, cv=options.cv,
                            cv_scheme=options.cv_scheme, random_state=options.split_seed,
                            keep_flagged_columns=options.keep_flagged_columns)
    brief = task.briefing
    splits = FixedSplits(make_splits(task.dataset, options.cv, options.split_seed,
                                     brief.cv_scheme), brief.cv_scheme, brief.cv_reason)
    verifier = DeterministicVerifier(options.margin)
    run_id = tracker.start(
        f"compare-{dataset.name}",
        {"agentic.role": "comparison", TAG: comparison_id, "dataset": dataset.name},
        {"dataset": dataset.name, "n_train_rows": task.train.n_rows,
         "n_holdout_rows": task.holdout.dataset.n_rows, "holdout_digest": task.holdout.digest,
         "cv_scheme": brief.cv_scheme, "trainers": ",".join(trainers),
         **_shared_params(options)})
    status = "FAILED"
    try:
        arms: list[Arm] = []
        total = len(options.proposers) * len(options.seeds)
        for name in options.proposers:
            for seed in options.seeds:
                say(f"[{len(arms) + 1}/{total}] {dataset.name}: {name}, seed {seed}")
                llm = options.llm
                if name == "llm" and options.llm_replay:
                    llm = LLMOptions(recording=recordings[seed])
                arm = _run_arm(task, name, seed, trainers, options, llm, splits, verifier,
                               {TAG: comparison_id, TAG_SEED: str(seed),
                                "agentic.comparison_run_id": run_id}, observers)
                arms.append(arm)
                say(f"    best CV {arm.best_cv:.4f}, holdout {arm.holdout:.4f}, "
                    f"{arm.attempts} attempts ({arm.verified} verified, {arm.proposals} "
                    f"proposed by {name} itself) in {arm.wall_seconds:.1f}s; "
                    f"{arm.stop_reason}")
        report = DatasetReport(dataset.name, comparison_id, arms[0].metric,
                               arms[0].greater_is_better,
                               _settings(task, splits, trainers, options), summarize(arms),
                               arms, run_id=run_id)
        _write_report(report, tracker, output)
        status = "FINISHED"
        return report
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    finally:
        tracker.end(status)


def _settings(task: SealedTask, splits: FixedSplits, trainers: Sequence[str],
              options: CompareOptions) -> dict[str, str]:
    """What every arm shared, in words, for the top of the report."""
    brief, dataset = task.briefing, task.train
    settings = {
        "dataset": f"{dataset.name}: {dataset.n_rows} training rows, target "
                   f"{dataset.target!r} ({dataset.task})",
        "holdout": f"{task.holdout.dataset.n_rows} sealed rows, {task.holdout.scheme}, "
                   f"digest {task.holdout.digest}",
        "cv": f"{len(splits.splits)} folds, {brief.cv_scheme} ({brief.cv_reason}), the same "
              "fold indices for every arm",
        "budget": options.budget_text(),
        "verifier": f"beats the trivial baseline by {options.margin:g}; leakage checks",
        "proposers": ", ".join(options.proposers),
        "seeds": ", ".join(map(str, options.seeds)) + " (proposer and model seeds; the split "
                 f"seed is {options.split_seed})",
        "trainers": ", ".join(trainers),
        "excluded columns": _excluded(dataset, brief),
    }
    if options.llm_replay and "llm" in options.proposers:
        settings["llm"] = f"replayed from comparison {options.llm_replay}"
    return settings


def _excluded(dataset: Dataset, brief: Briefing) -> str:
    """Every column the arms do not read: IDs and constants, and columns the briefing flagged."""
    names = list(dict.fromkeys([*dataset.excluded_columns, *brief.excluded]))
    return ", ".join(names) or "none"


def _write_report(report: DatasetReport, tracker: ComparisonTracker,
                  output: str | Path | None) -> None:
    """Plots, Markdown, HTML and JSON into a folder, logged on the comparison run."""
    # the plots' legends in the verdict's order: best holdout rank first (CV is what they draw)
    arms = sorted(report.arms, key=lambda a: report.ranks.get(a.proposer, math.inf))
    with temporary_directory() as tmp:
        directory = Path(tmp)
        plot_best_so_far(arms, directory / "best_so_far_by_attempt.png", by="attempt")
        plot_best_so_far(arms, directory / "best_so_far_by_time.png", by="time")
        plot_cv_vs_holdout(arms, directory / "cv_vs_holdout.png")
        (directory / "comparison.md").write_text(dataset_markdown(report))
        images = {name: (directory / name).read_bytes() for name in PLOTS}
        (directory / "comparison.html").write_text(dataset_html(report, images))
        write_json(directory / "comparison.json",
                   {"comparison_id": report.comparison_id, "settings": report.settings,
                    "summary": report.summary, "arms": [a.row() for a in arms],
                    "curves": {f"{a.proposer}/{a.seed}": a.curve for a in arms}})
        tracker.log_dataset_report(report, directory, dataset_markdown(report, plots=False))
        _keep(directory, output, report.dataset)


def _run_arm(task: SealedTask, name: str, seed: int, trainers: Sequence[str],
             options: CompareOptions, llm: LLMOptions, splits: FixedSplits,
             verifier: DeterministicVerifier, tags: dict[str, str],
             observers: Sequence[Any]) -> Arm:
    """One proposer x seed: a search run on the shared task, folds, verifier and budget."""
    made: list[CandidateProposer] = []
    settings = options.arm_settings(seed, splits, trainers)

    def make() -> CandidateProposer:
        made.append(build_proposer(name, seed=seed, trainers=trainers, dataset=task.dataset,
                                   candidates=options.candidates, llm=llm,
                                   portfolio=settings.portfolio))
        return made[0]

    arm_tracker = MlflowTracker(register=False, log_model=False,
                                run_name=f"{task.dataset.name}-{name}-s{seed}", tags=tags)
    searched = search_sealed(task, make, settings,
                             verifier=verifier, tracker=arm_tracker, observers=observers)
    return arm_from_search(searched, proposer=name, seed=seed,
                           run_id=arm_tracker.parent_run_id or "",
                           llm_exchanges=getattr(made[0], "exchanges", ()))


def _keep(directory: Path, output: str | Path | None, name: str) -> None:
    """Copy the report files to ``--output`` (``output/<name>/``) when asked."""
    if not output:
        return
    shutil.copytree(directory, Path(output) / name, dirs_exist_ok=True)


def _log_ranking(tracker: ComparisonTracker, result: ComparisonResult,
                 output: str | Path | None) -> None:
    grid = ranking_grid(result.ranking or [])
    lines = [f"## Proposers ranked across {len(result.reports)} datasets "
             f"({result.comparison_id})", "", grid_markdown(grid), ""]
    lines += [f"- {r.dataset}: {r.verdict}" for r in result.reports]
    markdown = "\n".join(lines) + "\n"
    with temporary_directory() as tmp:
        directory = Path(tmp)
        (directory / "ranking.md").write_text(markdown)
        (directory / "ranking.html").write_text(page("Ranking", grid_html(grid)))
        write_json(directory / "ranking.json", result.ranking)
        tracker.log_ranking(result.ranking or [], directory, markdown)
        _keep(directory, output, ".")


def _llm_recordings(options: CompareOptions, names: Sequence[str], tracker: ComparisonTracker,
                    ) -> dict[str, dict[int, list[dict]]]:
    """Recordings of an earlier comparison's LLM arms, per dataset and seed, or a clear error."""
    if not options.llm_replay:
        return {}

    tracker.configure()  # the earlier comparison is read from this comparison's store
    out: dict[str, dict[int, list[dict]]] = {}
    for name in names:
        runs = find_llm_recordings(options.llm_replay, name)
        missing = [s for s in options.seeds if s not in runs]
        if missing:
            raise UserInputError(
                f"--llm-replay {options.llm_replay}: no recorded llm search for dataset "
                f"{name!r} with seed(s) {', '.join(map(str, missing))} (found seeds: "
                f"{', '.join(map(str, sorted(runs))) or 'none'})")
        out[name] = {s: load_llm_recording(runs[s]) for s in options.seeds}
    return out
