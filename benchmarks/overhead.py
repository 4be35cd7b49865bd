"""How much of a search's wall time is not model fitting (proposing, verifying, tracking, logging).

Runs the main job (`mlflow-agentic run` defaults: sealed holdout, briefing, Optuna search,
holdout scoring) on examples/churn.csv twice in one process:
  1. reference: without MLflow, and
  2. tracked: the same search recorded in a sqlite MLflow store, model logged and registered.
Model fitting = CV folds + refit of the best + holdout refits of every attempt.
Prints where the time went and the ratios. Target (issue 2): non-fitting share under 10%.

    python benchmarks/overhead.py [--data PATH] [--max-iterations N] [--seed S] [--loop-only]
                                  [--remote]

--remote records the tracked run on a remote tracking server instead: an MLflow server backed
by PostgreSQL, started for the benchmark on 127.0.0.1 (target, issue 13: under 5% of wall time
outside model fitting).

--loop-only measures the search loop with MLflow tracking alone (no sealed holdout, briefing or
holdout scoring), the scope of the first target.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Timed:
    """Wraps an object; the wall time of every method call is added to ``spent[label]``."""

    def __init__(self, inner, label: str, spent: dict) -> None:
        self._inner, self._label, self._spent = inner, label, spent
        self.name = getattr(inner, "name", type(inner).__name__)

    def __setattr__(self, attr, value):
        if attr.startswith("_") or attr == "name":
            object.__setattr__(self, attr, value)
        else:
            setattr(self._inner, attr, value)

    def _phase(self, attr: str) -> str:
        """The tracker's time in two parts: per attempt while the search runs, and once at the
        end (the search's totals, the model logged and registered)."""
        if self._label != "tracking":
            return self._label
        if attr in ("finish", "on_search_end"):
            return "tracking at the end (totals, model logged, registered)"
        return "tracking while searching (runs, attempts)"

    def __getattr__(self, attr):
        value = getattr(self._inner, attr)
        if not callable(value):
            return value

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self._spent[self._phase(attr)] += time.perf_counter() - start

        return timed


def search(data: Path, max_iterations: int, seed: int, tracked: bool, loop_only: bool,
           n_jobs: int | None = None) -> dict:

    from mlflow_agentic import Dataset, OptunaProposer
    from mlflow_agentic.engine import AgenticAutoML
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    spent: dict[str, float] = defaultdict(float)
    start = time.perf_counter()
    dataset = Dataset.from_path(data)
    spent["load data"] = time.perf_counter() - start
    tracker = Timed(MlflowTracker(), "tracking", spent) if tracked else None
    proposer = Timed(OptunaProposer(seed=seed), "proposing (optuna)", spent)
    if loop_only:
        run = AgenticAutoML(proposer, max_iterations=max_iterations, seed=seed,
                            n_jobs=n_jobs, observers=[tracker] if tracker else []).solve(dataset)
        holdout_fit = 0.0
    else:
        outcome = run_search(dataset, lambda: proposer, max_iterations=max_iterations,
                             seed=seed, tracker=tracker, n_jobs=n_jobs)
        run, holdout_fit = outcome.run, outcome.holdout.fit_seconds
    wall = time.perf_counter() - start
    fit = run.fit_seconds + holdout_fit
    accounted = fit + sum(spent.values())
    spent["model fitting (CV folds, refit, holdout refits)"] = fit
    spent["engine other (split, briefing checks, baseline, verify)"] = wall - accounted
    return {"wall": wall, "fit": fit, "spent": dict(spent), "attempts": len(run.attempts),
            "summary": run.summary()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "examples" / "churn.csv")
    parser.add_argument("--max-iterations", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loop-only", action="store_true",
                        help="the loop + tracking only (no holdout, briefing, holdout scoring)")
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="fold workers (1: fitting runs in this process, so wall minus "
                             "fitting is exactly the rest; default: every core)")
    parser.add_argument("--remote", action="store_true",
                        help="track on an MLflow server backed by PostgreSQL (started here)")
    args = parser.parse_args()
    if args.remote:
        from services import postgres_tracking_server

        with postgres_tracking_server() as (uri, _):
            measure(args, uri)
    else:
        # A user's store exists after their first run: create it (schema migrations) first.
        measure(args, f"sqlite:///{tempfile.mkdtemp(prefix='overhead-')}/mlflow.db")


def measure(args, uri: str) -> None:
    import mlflow

    mlflow.set_tracking_uri(uri)
    start = time.perf_counter()
    mlflow.MlflowClient().search_experiments()
    store_setup = time.perf_counter() - start

    ref = search(args.data, args.max_iterations, args.seed, False, args.loop_only, args.n_jobs)
    tracked = search(args.data, args.max_iterations, args.seed, True, args.loop_only,
                     args.n_jobs)

    scope = "loop + tracking only" if args.loop_only else "main job (holdout, briefing, scoring)"
    print(f"tracking: {uri}")
    print(f"data: {args.data.name}; {scope}; {tracked['attempts']} attempts; "
          f"{tracked['summary']}")
    print(f"\n{'where the time went (tracked run)':<52}{'seconds':>9}{'share':>8}")
    for label, seconds in sorted(tracked["spent"].items(), key=lambda kv: -kv[1]):
        print(f"  {label:<50}{seconds:>9.2f}{seconds / tracked['wall']:>8.1%}")
    print(f"  {'total wall':<50}{tracked['wall']:>9.2f}")
    print(f"  (opening the store, once per store, not included: {store_setup:.2f} s)")
    non_fit = 1 - tracked["fit"] / tracked["wall"]
    during = tracked["spent"].get("tracking while searching (runs, attempts)", 0.0)
    print(f"\ntracking while searching, share of wall: {during / tracked['wall']:.1%}   "
          "(target with a remote server, issue 13: < 5%)")
    ref_non_fit = 1 - ref["fit"] / ref["wall"]
    print(f"\nnon-fitting share, tracked run:    {non_fit:.1%}   (target < 10%)")
    print(f"non-fitting share, reference run:  {ref_non_fit:.1%}   (engine alone, no MLflow)")
    print(f"wall ratio tracked / reference:    {tracked['wall'] / ref['wall']:.3f}")
    print(f"fit ratio  tracked / reference:    {tracked['fit'] / ref['fit']:.3f}  "
          "(same candidates; differences are machine noise)")


if __name__ == "__main__":
    main()
