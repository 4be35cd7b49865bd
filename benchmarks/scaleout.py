"""Scale-out: attempts per minute with 1, 2 and 4 workers on one study (PostgreSQL) logging to
one MLflow tracking server backed by PostgreSQL, on this machine.

Each worker is a separate `mlflow-agentic worker --n-jobs 1` process; the study holds the same
number of trials in every round. Prints attempts per minute, the speed-up against one worker
(the reference, same process, same data), and the overhead per attempt: an attempt's wall time
in its worker minus its fold fitting (proposing, verifying, tracking over HTTP).

    python benchmarks/scaleout.py [--data PATH] [--trials N] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from services import ROOT, postgres_tracking_server


def round_of(k: int, data: Path, trials: int, tracking: str, storage: str) -> dict:
    study = f"scale-{k}-{int(time.time())}"
    command = [sys.executable, "-m", "mlflow_agentic", "worker", "--study", study, "--storage",
               storage, "--data", str(data), "--tracking-uri", tracking, "--n-trials",
               str(trials), "--n-jobs", "1", "--trainers", "linear,random_forest,xgboost",
               "--cv", "3", "--experiment", study, "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(k)]
    errors = [p.communicate()[1] for p in procs]
    wall = time.perf_counter() - started
    if any(p.returncode for p in procs):
        raise SystemExit(f"a worker failed: {errors}")
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking)
    experiment = client.get_experiment_by_name(study).experiment_id
    runs = client.search_runs([experiment], "tags.`agentic.role` = 'attempt'",
                              max_results=1000)
    overhead = [r.data.metrics["attempt_seconds"] - r.data.metrics["fit_seconds"]
                for r in runs if "attempt_seconds" in r.data.metrics]
    return {"workers": k, "attempts": len(runs), "wall": wall,
            "per_minute": 60 * len(runs) / wall,
            "overhead": sum(overhead) / max(len(overhead), 1),
            "by_worker": len({r.data.tags.get("worker") for r in runs})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "examples" / "churn.csv")
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}; data: {args.data.name}; {args.trials} trials per round; "
          "each worker --n-jobs 1; PostgreSQL-backed MLflow server and Optuna storage")
    with postgres_tracking_server() as (tracking, storage):
        rounds = [round_of(int(k), args.data, args.trials, tracking, storage)
                  for k in args.workers.split(",")]
    ref = rounds[0]
    print(f"\n{'workers':>8}{'attempts':>10}{'wall s':>9}{'attempts/min':>14}{'speed-up':>10}"
          f"{'overhead/attempt s':>20}{'workers that ran':>18}")
    for r in rounds:
        print(f"{r['workers']:>8}{r['attempts']:>10}{r['wall']:>9.1f}{r['per_minute']:>14.1f}"
              f"{r['per_minute'] / ref['per_minute']:>10.2f}{r['overhead']:>20.3f}"
              f"{r['by_worker']:>18}")


if __name__ == "__main__":
    main()
