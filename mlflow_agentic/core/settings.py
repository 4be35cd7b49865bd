"""``SearchSettings``: every setting of a search, declared and validated in one place.

The command line, ``search()``, the orchestrator, the comparison runner and the loop all take
one of these (or its field names as keyword arguments, which build one), so a default or a
check lives here only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from mlflow_agentic.core.errors import UserInputError, did_you_mean

BACKENDS = ("local", "dask", "ray")
"""Where the fold fits run (``engine.backends``)."""
SELECTION_RULES = ("best", "one-se")
"""How the selected attempt is chosen (``engine.selection``)."""
RegisterPolicy = Literal["better", "always", "never"]
REGISTER_POLICIES: tuple[RegisterPolicy, ...] = ("better", "always", "never")
"""``better`` (the default): a new version only when the selected model beats the current
``@challenger`` beyond the noise of the same sealed rows (or there is nothing like for like to
compare with); ``always``: every search registers a version; ``never``: log, do not register."""


def register_policy(value: bool | str | None) -> RegisterPolicy:
    """``True``/``False`` (the older spelling) or one of ``REGISTER_POLICIES``."""
    if value is True:
        return "better"
    if value is False or value is None:
        return "never"
    for policy in REGISTER_POLICIES:
        if value == policy:
            return policy
    raise UserInputError(f"--register {value!r}: unknown policy. "
                         f"{did_you_mean(str(value), REGISTER_POLICIES)}")


DEFAULT_MAX_ITERATIONS = 8
DEFAULT_PATIENCE = 3


CV_SCHEMES = ("auto", "stratified", "kfold", "group", "time")
"""How CV folds are built; ``auto`` follows the briefing's advice (``engine.cv``)."""


def setting(default: Any, help: str, *, flag: str | None = None, metavar: str | None = None,
            choices: tuple[str, ...] | None = None, minimum: float | None = None,
            logged_as: str | None = None, same_on_resume: bool = False) -> Any:
    """A field of ``SearchSettings`` with all that is derived from it: its help, its flag
    (default: ``--`` + the name with dashes; ``--no-<name>`` for a setting that is on by
    default), its choices and minimum (the command line, the MLproject); ``logged_as``: the
    search run's parameter it is recorded as (default: its name); ``same_on_resume``: a resumed
    search must run with the value the killed one had (``tracking.resume``). ``flag=""``: not
    on the command line (set by the code that builds the settings), not logged."""
    return field(default=default, metadata={
        "help": help, "flag": flag, "metavar": metavar, "choices": choices, "minimum": minimum,
        "logged_as": logged_as, "same_on_resume": same_on_resume})


def offered_settings() -> list[dataclasses.Field[Any]]:
    """The settings a user sets (a field with ``flag=""`` is set by code)."""
    return [f for f in dataclasses.fields(SearchSettings) if f.metadata.get("flag") != ""]


def logged_name(f: dataclasses.Field[Any]) -> str:
    """The search run's parameter a setting is recorded as."""
    return f.metadata.get("logged_as") or f.name


def same_on_resume() -> tuple[str, ...]:
    """The run parameters of the settings a resumed search must share with the killed one."""
    return tuple(logged_name(f) for f in offered_settings() if f.metadata["same_on_resume"])


FINALIZE_DECIDES = ("ensemble", "selection")
"""Settings ``finalize`` chooses for a distributed search as a whole (its workers run no
ensemble and select nothing): free for the workers, and on the resume that finalize is."""


def shared_by_workers() -> tuple[str, ...]:
    """The settings every worker of one study and its ``finalize`` must agree on: those a
    resume must match, but what finalize decides."""
    return tuple(f.name for f in offered_settings()
                 if f.metadata["same_on_resume"] and f.name not in FINALIZE_DECIDES)


LARGE_ROWS = 10_000
"""Training rows from which a search's CV uses ``LARGE_FOLDS`` folds (``--large-rows``)."""
LARGE_FOLDS = 3
"""Folds on a large table: each attempt costs about half of 5-fold CV (3 fits on two thirds of
the rows against 5 on four fifths), so a minute holds twice the attempts; FLAML and AutoGluon
likewise validate large data more cheaply than small."""



def folds_for(cv: Any, large_rows: int, n_rows: int) -> Any:
    """``cv`` (a fold count, or fixed splits: as given), or ``LARGE_FOLDS`` when ``n_rows`` is
    at least ``large_rows`` (0: never) and ``cv`` is more."""
    if isinstance(cv, int) and large_rows and n_rows >= large_rows:
        return min(cv, LARGE_FOLDS)
    return cv


MAX_TIME_BUDGET = 7 * 24 * 3600
"""The longest wall budget accepted (seconds): past it, time arithmetic overflows (1e10 s) and
no search here needs more."""


@dataclass(frozen=True)
class SearchSettings:
    """How a search runs: its budget, its folds and metric, what it may try, and its machine.

    Budget: seeds, then up to ``max_iterations`` reflection attempts, stopping after
    ``patience`` attempts without a verified improvement; ``max_attempts`` (seeds included) and
    ``time_budget`` (wall seconds) bound every proposer alike. At least one bound is required.
    Every field is declared once, here: the command line's options and the MLproject's
    parameters are generated from these declarations (``cli.settings``).
    """

    max_iterations: int | None = setting(
        DEFAULT_MAX_ITERATIONS, "Attempts the proposer makes after its seed candidates; the "
        "seeds and the ensemble come on top of them (--max-attempts bounds all of them) "
        "[default: 8; off with --time-budget].", minimum=0)
    patience: int | None = setting(
        DEFAULT_PATIENCE, "Stop after this many attempts without a verified improvement "
        "[default: 3; off with --time-budget].", minimum=1)
    max_attempts: int | None = setting(
        None, "Attempts in all, seeds included (a bound every proposer shares).", minimum=1,
        logged_as="budget_attempts")
    time_budget: float | None = setting(
        None, "Wall-clock budget for the whole command (search, refit, holdout, registration); "
        "iterations and patience are off unless given.", metavar="SECONDS",
        logged_as="budget_seconds")
    cv: Any = setting(5, "Cross-validation folds (or, from Python, fixed splits shared by "
                      "searches).", logged_as="cv_folds",
                      same_on_resume=True)
    large_rows: int = setting(
        LARGE_ROWS, "From this many training rows, CV uses 3 folds instead of --cv (a large "
        "table's folds cost time and their scores vary little); 0: --cv at every size.",
        minimum=0)
    cv_scheme: str = setting("auto", "auto follows the briefing's advice (group / time / "
                             "stratified).", choices=CV_SCHEMES, same_on_resume=True)
    metric: str | None = setting(
        None, "roc_auc, log_loss, accuracy, balanced_accuracy, f1, roc_auc_ovr, rmse, mae, r2 "
        "(default: by task).", same_on_resume=True)
    trainers: tuple[str, ...] | None = setting(
        None, "Comma-separated trainers to search (default: all that fit the task, but mlp, "
        "which is searched only when named).",
        same_on_resume=True)
    portfolio: str = setting(
        "builtin", "The optuna proposer's first candidates: builtin (proven configurations, "
        "chosen across public datasets by benchmarks/portfolio.py), defaults (each trainer at "
        "its defaults), or a portfolio JSON file.", metavar="builtin|defaults|FILE")
    seed: int = setting(0, "Seed for CV splits, models and the proposer.", same_on_resume=True)
    n_jobs: int | None = setting(
        None, "Worker processes for the CV folds; each model is single-threaded [default: the "
        "cores this process may use; -1: all].")
    prune: bool = setting(True, "Run every fold of every candidate (no fold-by-fold pruning).",
                          logged_as="pruning", same_on_resume=True)
    ensemble: bool = setting(True, "Do not try a greedy ensemble of the verified attempts at "
                             "the end (a step of the search, after the loop).", same_on_resume=True)
    stack: bool = setting(False, "Also try a stacking layer (a linear model over the best "
                          "attempts' out-of-fold predictions) beside the ensemble. Off by "
                          "default: on the benchmark suite it lost more often than it won.")
    bag: bool = setting(False, "Serve the selected attempt as the average of the models its "
                        "CV folds fitted (no refit on all rows) whenever they were kept and "
                        "fit the time left.")
    refit_full: bool = setting(
        True, "Serve the model the holdout scored (fitted on the training rows only) instead "
        "of the same recipe refit on the training and holdout rows once the holdout has scored "
        "it (the default: it won on both benchmark sets; the holdout's evidence stays that of "
        "the model it scored either way).")
    margin: float = setting(0.01, "How much a candidate must beat the trivial baseline by.",
                            logged_as="verifier_margin", same_on_resume=True)
    selection: str = setting(
        "best", "Which verified attempt is registered: the top CV score (best), or the "
        "cheapest trainer within one standard error of it (one-se). Ties within one standard "
        "error are reported either way.", choices=SELECTION_RULES, same_on_resume=True)
    backend: str = setting(
        "local", "Where the CV folds run: local processes, or a Dask or Ray cluster (a local "
        "one of --n-jobs workers unless --scheduler / --ray-address is given). Needs the [dask] "
        "or [ray] extra.", choices=BACKENDS)
    backend_address: str | None = setting(
        None, "The cluster's address (a Dask scheduler, a Ray head); None: a local cluster.",
        flag="")
    refit: bool = setting(
        True, "Refit the selected attempt on all training rows (off for a worker of a shared "
        "study: finalize selects and refits once, over every worker's attempts).", flag="")

    def __post_init__(self) -> None:
        if isinstance(self.trainers, str):  # "linear" or "linear,xgboost", as on the CLI
            object.__setattr__(self, "trainers", tuple(
                t.strip() for t in self.trainers.split(",") if t.strip()))
        if self.trainers is not None and not isinstance(self.trainers, tuple):
            object.__setattr__(self, "trainers", tuple(self.trainers))
        for f in dataclasses.fields(self):
            if f.metadata.get("minimum") is not None:
                _at_least(f.name, getattr(self, f.name), f.metadata["minimum"])
        if self.time_budget is not None and not (
                isinstance(self.time_budget, (int, float)) and math.isfinite(self.time_budget)
                and self.time_budget > 0):
            raise UserInputError(f"time budget {self.time_budget!r}: expected a positive "
                                 "number of seconds")
        if self.max_iterations is None and self.max_attempts is None and \
                self.time_budget is None:
            raise UserInputError("an unbounded search: give max_iterations, max_attempts or "
                                 "time_budget")
        if isinstance(self.time_budget, (int, float)) and self.time_budget > MAX_TIME_BUDGET:
            raise UserInputError(f"time budget {self.time_budget:g} seconds: at most "
                                 f"{MAX_TIME_BUDGET:,} (7 days) is accepted")
        if isinstance(self.cv, (bool, str, bytes, float)):
            raise UserInputError(f"cv {self.cv!r}: expected a number of folds (2 or more) or "
                                 "a list of (train, test) index pairs")
        if isinstance(self.cv, int) and self.cv < 2:
            raise UserInputError(f"cv must be at least 2 folds, got {self.cv}")
        if self.n_jobs is not None and (isinstance(self.n_jobs, bool)
                                        or not isinstance(self.n_jobs, int)
                                        or self.n_jobs == 0 or self.n_jobs < -1):
            raise UserInputError(f"n_jobs {self.n_jobs!r}: use 1 or more workers, or -1 for "
                                 "all cores")
        if self.cv_scheme not in CV_SCHEMES:
            raise UserInputError(f"cv scheme {self.cv_scheme!r}: expected one of "
                                 f"{', '.join(CV_SCHEMES)}")
        if self.backend not in BACKENDS:
            raise UserInputError(f"backend {self.backend!r}: expected "
                                 f"{', '.join(BACKENDS[:-1])} or {BACKENDS[-1]}")
        if self.selection not in SELECTION_RULES:
            raise UserInputError(f"selection {self.selection!r}: expected one of "
                                 f"{', '.join(SELECTION_RULES)}")
        if not (isinstance(self.margin, (int, float)) and 0 <= self.margin < 1):
            raise UserInputError(f"margin must be in [0, 1), got {self.margin!r}")

    @classmethod
    def of(cls, settings: SearchSettings | None = None, **changes: Any) -> SearchSettings:
        """``settings`` (default: the defaults) with ``changes``; an unknown name is refused."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in changes if k not in names]
        if unknown:
            raise TypeError(f"unknown search setting {unknown[0]!r}. "
                            f"{did_you_mean(unknown[0], names)}")
        return dataclasses.replace(settings or cls(), **changes)

    @classmethod
    def budgeted(cls, settings: SearchSettings | None = None, **overrides: Any
                 ) -> SearchSettings:
        """The front door's rule: iterations and patience (None: not given) default to 8 and 3,
        and are off with a time budget unless given. ``settings``, when given, is taken as is
        (with ``overrides``)."""
        if settings is None:
            budgeted = overrides.get("time_budget") is not None
            for name, default in (("max_iterations", DEFAULT_MAX_ITERATIONS),
                                  ("patience", DEFAULT_PATIENCE)):
                if overrides.get(name) is None:
                    overrides[name] = None if budgeted else default
        return cls.of(settings, **overrides)

    def folds_for(self, n_rows: int) -> Any:
        """The folds a search of ``n_rows`` training rows uses (``folds_for``)."""
        return folds_for(self.cv, self.large_rows, n_rows)

    def replace(self, **changes: Any) -> SearchSettings:
        return SearchSettings.of(self, **changes)

    def logged(self) -> dict[str, Any]:
        """Every setting a user sets, as the search run's parameters (``logged_as``; unset:
        ``none``). The engine records what it resolved from them over these (the folds, the
        metric, the trainers, the pruner): ``tracking.live.search_run.search_params``."""
        out: dict[str, Any] = {}
        for f in offered_settings():
            value = getattr(self, f.name)
            if isinstance(value, list):  # fixed splits given from Python
                value = f"{len(value)} fixed splits"
            out[logged_name(f)] = ("none" if value is None else ",".join(value)
                                   if isinstance(value, tuple) else value)
        return out


def _at_least(name: str, value: Any, low: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserInputError(f"{name} must be a whole number, got {value!r}")
    if value < low:
        raise UserInputError(f"{name} must be >= {low}, got {value}")



@dataclass(frozen=True)
class TrackingOptions:
    """Where a search is recorded and what the registry does with its model (the search
    itself never depends on these)."""

    experiment: str | None = None
    """The MLflow experiment (default: ``<data file stem>-agentic``)."""
    register_name: str | None = None
    """The registered model (default: ``<data file stem>-agentic``)."""
    register: RegisterPolicy | bool = "better"
    """One of ``REGISTER_POLICIES`` (True: ``better``; False: ``never``; made the policy at
    construction)."""
    diagnostics: bool = True
    """The selected model's holdout diagnostics on its run (~10 s on churn)."""
    tracking_uri: str | None = None
    """Default: ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "register", register_policy(self.register))

    @classmethod
    def taken_from(cls, tracking: TrackingOptions | None,
                   overrides: dict[str, Any]) -> TrackingOptions:
        """``tracking`` with the overrides that name its fields (taken out of ``overrides``)."""
        names = [f.name for f in dataclasses.fields(cls)]
        mine = {k: overrides.pop(k) for k in list(overrides) if k in names}
        return dataclasses.replace(tracking or cls(), **mine)
