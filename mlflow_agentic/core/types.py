"""The engine's records: what was proposed, what it scored, and whether the score counts."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

Task = Literal["binary", "multiclass", "regression"]
"""What a target is: two classes, more, or a number."""
TASKS: tuple[Task, ...] = ("binary", "multiclass", "regression")
CLASSIFICATION: tuple[Task, ...] = ("binary", "multiclass")

ENSEMBLE = "ensemble"
"""The trainer name of an ensemble attempt (not in the registry: the engine builds it)."""
STACK = "stack"
"""The trainer name of a stacking attempt (a linear model over its members' outputs)."""
COMBINERS = (ENSEMBLE, STACK)
"""Attempts made of other attempts (params ``members``): refit member by member."""


def is_classification(task: str | None) -> bool:
    """Whether ``task`` predicts classes (binary or multiclass)."""
    return task in CLASSIFICATION


def is_regression(task: str | None) -> bool:
    """Whether ``task`` predicts a number."""
    return task == "regression"


class StopKind(str, Enum):
    """Why a search ended, as one value a proposer or the loop sets (the detail says more)."""

    ITERATIONS = "max_iterations"
    PATIENCE = "patience"
    ATTEMPTS = "attempt_budget"
    TIME = "time_budget"
    COST = "cost_cap"
    ENDPOINT = "endpoint_failure"
    EXHAUSTED = "proposer_exhausted"
    PROPOSER_ERROR = "proposer_error"


@dataclass(frozen=True)
class StopReason:
    """``kind`` for code (tags, tests), ``detail`` for people."""

    kind: StopKind
    detail: str

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True)
class SolutionCandidate:
    """A trainer plus hyperparameters (overrides over the trainer's defaults), and why."""

    trainer: str
    params: Mapping[str, Any] = field(default_factory=dict)
    rationale: str = ""
    source: str = ""
    """Who made it when the proposer has more than one way: ``llm``, or ``fallback`` (a
    deterministic suggestion after the LLM's answers could not be used)."""
    trial: int | None = None
    """The Optuna trial number, when a study proposed it (workers sharing a study number their
    attempts by it)."""
    code: str | None = None
    """Code mode: the LLM-written ``candidate.py`` (trainer ``code``), run in the sandbox."""
    artifacts: Mapping[str, str] = field(default_factory=dict)
    """Text files the attempt's run keeps (code mode: the plan entry), by file name."""

    @property
    def title(self) -> str:
        """What people read in progress lines, leaderboards and run names: the trainer, or in
        code mode the hypothesis the candidate tests (every code attempt's trainer is
        ``code``)."""
        hypothesis = self.params.get("hypothesis") if self.code is not None else None
        return f"code: {hypothesis}" if hypothesis else self.trainer


@dataclass(frozen=True)
class Verdict:
    """The deterministic verifier's decision on one score."""

    valid: bool
    reason: str
    score: float
    quarantined: bool = False
    """A critical finding about the candidate itself (e.g. too good to be true): never selected."""


@dataclass(frozen=True)
class AttemptRecord:
    """One evaluated candidate. A failure is data: ``error`` is set and ``score`` is the worst."""

    candidate: SolutionCandidate
    score: float
    verdict: Verdict
    index: int = 0
    phase: str = "seed"
    """``seed`` (from ``propose_initial``) or ``reflect`` (from ``propose_next``)."""
    metric: str = ""
    greater_is_better: bool = True
    params: Mapping[str, Any] = field(default_factory=dict)
    """The hyperparameters actually used: trainer defaults overlaid with the candidate's."""
    fold_scores: tuple[float, ...] = ()
    score_std: float = float("nan")
    fit_seconds: float = 0.0
    """Time spent fitting and predicting inside the CV folds."""
    seconds: float = 0.0
    """Wall time of the whole attempt (building, CV, verifying)."""
    error: str | None = None
    traceback: str | None = None
    proposer: str = ""
    elapsed: float = 0.0
    """Seconds from the start of the search to the end of this attempt, proposal time included
    (what a wall-time budget counts)."""
    pruned: str | None = None
    """Why the attempt stopped before its last fold (clearly behind, or the time budget)."""
    restored: bool = False
    """Read back from the killed search being resumed (recorded then, not run again)."""
    artifacts: Mapping[str, str] = field(default_factory=dict)
    """Text files for the attempt's run, by name (code mode: candidate.py, the plan entry, the
    critic's note, the sandbox log)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Extra tags for the attempt's run (code mode: ``sandbox`` and its limits)."""

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def utility(self) -> float:
        """Higher-is-better score; ``-inf`` for failures (what samplers are told)."""
        if self.failed or self.pruned is not None or not math.isfinite(self.score):
            return float("-inf")
        return self.score if self.greater_is_better else -self.score

    @property
    def selectable(self) -> bool:
        """Verified and not quarantined: may be selected, refit and registered."""
        return self.verdict.valid and not self.verdict.quarantined

    @property
    def standard_error(self) -> float:
        """Standard error of the mean CV score: sample std of the folds / sqrt(folds)."""
        folds = [s for s in self.fold_scores if math.isfinite(s)]
        if len(folds) < 2:
            return float("nan")
        mean = sum(folds) / len(folds)
        variance = sum((s - mean) ** 2 for s in folds) / (len(folds) - 1)
        return math.sqrt(variance / len(folds))

    @property
    def status(self) -> str:
        if self.failed:
            return "failed"
        if self.pruned is not None:
            return "pruned"
        if self.verdict.quarantined:
            return "quarantined"
        return "verified" if self.verdict.valid else "rejected"


TIME_CUT = "time budget spent"
"""How an attempt the time budget cut says so (its ``pruned`` reason starts with it)."""

TIES_NAMED = 5
"""Ties the one-line summary names (130 linear models within a standard error of each other
made one 6,000-character line on OJ at 60 s)."""


def best_first(attempts: Iterable[AttemptRecord]) -> list[AttemptRecord]:
    """The selectable attempts, best CV utility first (equal ones: the earlier first)."""
    return sorted((a for a in attempts if a.selectable), key=lambda a: (-a.utility, a.index))


@dataclass
class EngineeringRun:
    """The outcome of ``AgenticAutoML.solve``."""

    attempts: list[AttemptRecord]
    best_candidate: SolutionCandidate | None
    best_score: float | None
    model: Any
    metric: str
    baseline_score: float
    n_iterations: int
    greater_is_better: bool = True
    best_attempt: AttemptRecord | None = None
    stop: StopReason | None = None
    dataset_name: str = ""
    task: str = ""
    refit_seconds: float = 0.0
    wall_seconds: float = 0.0
    preprocess_seconds: float = 0.0
    """Fitting each fold's preprocessing, once per style (shared by all candidates)."""
    selection: str = "best"
    """The rule that chose ``best_attempt`` (``engine.selection``)."""
    selection_note: str = ""
    """Why ``best_attempt`` is not the top one when no tie rule chose it: code mode's submitter,
    or a refit that would not fit the time left (``engine.after.selection.affordable``); or why a
    combination is the top one over a higher single CV score (``combination_wins``)."""
    top_attempt: AttemptRecord | None = None
    """The verified attempt with the top CV score, or the ensemble (stack) worth more than
    choosing that one (``engine.after.selection.combination_wins``); ``best_attempt`` under
    ``best``."""
    bagged: bool = False
    """``model`` is the average of the selected attempt's fold models, not a refit."""
    ties: tuple[AttemptRecord, ...] = ()
    """Other verified attempts within one standard error of the top CV score."""
    evidence_model: Any = None
    """With ``refit_full``: the selected attempt fitted on the training rows only, the model the
    holdout scored (``model`` is then the same recipe refit on training + holdout rows)."""
    served_rows: int = 0
    """The labelled rows ``model`` was fitted on (0: not recorded)."""
    served_note: str = ""
    """Why ``refit_full`` was asked for and not done ('' when it was, or was not asked)."""

    def tied(self, attempt: AttemptRecord) -> str:
        """``"true"`` when ``attempt`` is in the tie (within one standard error of the top CV
        score, or the top attempt itself when others are), else ``""``: the one flag the UI's
        ``tie`` tag, the leaderboard's table and its CSV all show."""
        inside = bool(self.ties) and (
            attempt in self.ties or (self.top_attempt is not None
                                     and attempt.index == self.top_attempt.index))
        return "true" if inside else ""

    @property
    def chosen(self) -> AttemptRecord:
        """``best_attempt``, where the caller holds a model (so an attempt was selected)."""
        if self.best_attempt is None:
            raise RuntimeError("no attempt was selected: this search has no model")
        return self.best_attempt

    @property
    def tie_window(self) -> float:
        """The top attempt's standard error: scores closer than this are a tie."""
        return self.top_attempt.standard_error if self.top_attempt else float("nan")

    @property
    def stop_reason(self) -> str:
        return "" if self.stop is None else self.stop.detail

    @property
    def valid_attempts(self) -> list[AttemptRecord]:
        return [a for a in self.attempts if a.verdict.valid]

    @property
    def fit_seconds(self) -> float:
        """Model fitting time: CV folds of every attempt (summed over workers), the fold
        preprocessing, the refit; the baseline excluded."""
        return (sum(a.fit_seconds for a in self.attempts) + self.refit_seconds
                + self.preprocess_seconds)

    def problems(self) -> list[str]:
        """What went wrong that the summary line does not say: a proposer or endpoint that
        stopped the search early, each trainer that failed in any of its attempts (how many,
        and the first reason)."""
        lines = []
        if self.stop is not None and self.stop.kind in (StopKind.ENDPOINT,
                                                        StopKind.PROPOSER_ERROR):
            made = sum(a.candidate.source == "llm" for a in self.attempts)
            lines.append(f"the search stopped early: {self.stop.detail}"
                         + (f" ({made} LLM proposal(s) were made)" if made else
                            " (no LLM proposal was made: the results are the seeds')"
                            if self.stop.kind == StopKind.ENDPOINT else ""))
        by_trainer: dict[str, list[AttemptRecord]] = {}
        for a in self.attempts:
            if a.phase != "ensemble" and a.candidate.code is None:
                by_trainer.setdefault(a.candidate.trainer, []).append(a)
        for trainer, attempts in by_trainer.items():
            failed = [a for a in attempts if a.failed]
            if not failed:
                continue
            share = (f"all {len(attempts)}" if len(failed) == len(attempts)
                     else f"{len(failed)} of {len(attempts)}")
            lines.append(f"trainer {trainer} failed in {share} of its attempt(s): "
                         f"{(failed[0].error or '')[:300]}")
        return lines

    def why_nothing_verified(self) -> str:
        """What became of the attempts, as they are: failed, pruned, quarantined, rejected."""
        counts: dict[str, int] = {}
        for a in self.attempts:
            counts[a.status] = counts.get(a.status, 0) + 1
        if not self.attempts:
            return "no attempt ran"
        if counts.get("failed", 0) == len(self.attempts):
            first = next(a.error for a in self.attempts if a.error)
            return f"every attempt failed (first error: {first[:300]})"
        if all((a.pruned or "").startswith(TIME_CUT) for a in self.attempts):
            return self._why_time_ran_out()
        parts = [f"{n} {status}" for status, n in sorted(counts.items())]
        rejected = ("; the rejected did not beat the trivial baseline "
                    f"{self.metric}={self.baseline_score:.4f}" if counts.get("rejected") else "")
        return ", ".join(parts) + rejected

    def _why_time_ran_out(self) -> str:
        """Every attempt cut by the time budget before its folds were scored: what the loop
        spent its seconds on (a wide file's fold preprocessing can take all of a small
        budget) and what to change."""
        prep = (f", {self.preprocess_seconds:.1f}s of it preparing the folds' preprocessing"
                if self.preprocess_seconds >= 0.05 else "")
        return (f"the time budget ran out before any attempt finished its folds: "
                f"{len(self.attempts)} pruned unscored; the loop ran {self.wall_seconds:.1f}s"
                f"{prep}; give a larger --time-budget")

    def leaderboard(self) -> list[AttemptRecord]:
        """Attempts best first (verified before unverified, failures last)."""
        return sorted(self.attempts, key=lambda a: (not a.verdict.valid, -a.utility, a.index))

    def summary(self) -> str:
        head = (f"Agentic AutoML: {len(self.attempts)} attempts "
                f"({len(self.valid_attempts)} verified)")
        if self.best_candidate is None:
            return f"{head}; nothing verified: {self.why_nothing_verified()}; nothing registered"
        label = "best" if self.best_attempt is self.top_attempt else "selected"
        line = (f"{head}; {label}={self.best_candidate.title} "
                f"{self.metric}={self.best_score:.4f} "
                f"(baseline {self.baseline_score:.4f})")
        return line + self.tie_note()

    def tie_note(self) -> str:
        """How the selected attempt stands against its ties ('' when none)."""
        top, chosen = self.top_attempt, self.best_attempt
        if top is None or chosen is None:
            return ""
        if self.bagged or (chosen is top and self.selection_note):  # a combination: why
            return f"; {self.selection_note}"
        if chosen is not top and self.selection_note:  # not by the score: say why
            return (f"; {self.selection_note} (the top CV score: {top.index:02d}-"
                    f"{top.candidate.title} {top.score:.4f})")
        others = [a for a in (top, *self.ties) if a is not chosen]
        if not others:
            return ""
        names = ", ".join(f"{a.index:02d}-{a.candidate.title} {a.score:.4f}"
                          for a in others[:TIES_NAMED])
        if len(others) > TIES_NAMED:  # after hundreds of trials: the leaderboard has them all
            names += f" and {len(others) - TIES_NAMED} more"
        window = f"one standard error ({self.tie_window:.4f})"
        if chosen is top:
            return f"; tied within {window} with {names}"
        return (f"; chosen by the one-standard-error rule: the cheapest within {window} of "
                f"the top CV score, over {names}")
