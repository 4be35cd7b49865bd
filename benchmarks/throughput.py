"""Throughput: attempts per minute with `--n-jobs 2` vs 1 on churn, and the share of wall time
outside model fitting.

    python benchmarks/throughput.py [--attempts 30] [--seed 0] [--load]

Runs the same seeded search (Optuna proposer, a fixed attempt budget, pruning on, tracked in a
sqlite MLflow store, holdout scored, model logged and registered) twice in one process: first
with one worker (the reference), then with two; checks both give the same leaderboard, and
prints attempts per minute and the ratio (target >= 1.7x). The non-fitting share is
1 - (fold fits + fold preprocessing + refit) / wall for one worker: every second of proposing,
verifying, tracking and logging is a second no model is fitted (target < 5%). With two workers
it is 1 - fitting / (2 x wall): the idle share of the two workers. `--load` keeps one core busy
with a second CPU-bound process during both runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def search(data: Path, n_jobs: int, attempts: int, seed: int, store: Path) -> dict:
    import mlflow

    from mlflow_agentic import Dataset, OptunaProposer
    from mlflow_agentic.frontdoor.orchestrator import seal, search_sealed
    from mlflow_agentic.tracking import MlflowTracker

    mlflow.set_tracking_uri(f"sqlite:///{store}")
    start = time.perf_counter()
    tracker = MlflowTracker(experiment=f"throughput-{n_jobs}", register_name="throughput")
    task = seal(Dataset.from_path(data), random_state=seed)
    result = search_sealed(task, lambda: OptunaProposer(seed=seed), max_iterations=None,
                           patience=None, max_attempts=attempts, seed=seed,
                           tracker=tracker, n_jobs=n_jobs, ensemble=False)
    wall = time.perf_counter() - start
    run = result.run
    return {"wall": wall, "loop": run.wall_seconds, "attempts": len(run.attempts),
            "fit": run.fit_seconds, "board": [(a.candidate.trainer, a.status,
                                               round(a.score, 10)) for a in run.attempts],
            "best": run.summary()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "examples" / "churn.csv")
    parser.add_argument("--attempts", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--load", action="store_true", help="keep one core busy meanwhile")
    args = parser.parse_args()

    import mlflow

    store = Path(tempfile.mkdtemp(prefix="throughput-")) / "mlflow.db"
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    mlflow.MlflowClient().search_experiments()  # create the store before timing

    burner = (subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.load
              else None)
    try:
        one = search(args.data, 1, args.attempts, args.seed, store)
        two = search(args.data, 2, args.attempts, args.seed, store)
    finally:
        if burner is not None:
            burner.kill()
    same = one["board"] == two["board"]
    print(f"data {args.data.name}; {args.attempts} attempts (Optuna seed {args.seed}, pruning "
          f"on, tracked){'; one core kept busy' if args.load else ''}")
    print(f"{'':<14}{'search s':>9}{'whole s':>9}{'attempts/min':>14}{'non-fitting':>13}")
    for label, r, workers in (("n_jobs=1", one, 1), ("n_jobs=2", two, 2)):
        rate = r["attempts"] / r["loop"] * 60
        share = 1 - r["fit"] / (workers * r["loop"])
        print(f"{label:<14}{r['loop']:>9.1f}{r['wall']:>9.1f}{rate:>14.1f}{share:>13.1%}")
    ratio = (two["attempts"] / two["loop"]) / (one["attempts"] / one["loop"])
    print(f"\nthroughput ratio n_jobs=2 / n_jobs=1: {ratio:.2f}x   (target >= 1.7x)")
    print(f"same leaderboard with 1 and 2 workers: {same}")
    print(one["best"])


if __name__ == "__main__":
    main()
