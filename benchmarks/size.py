"""Size: 10 attempts on 10k, 100k and 1M generated rows: wall time and peak memory per row.

Each size runs in a fresh process (a clean peak): the main job (sealed holdout, briefing,
Optuna over linear and hist_gradient_boosting, 3 folds, 2 worker processes, ensemble, refit,
holdout, the model logged to a sqlite store; registration and diagnostics off). Peak memory is
the main process's max RSS plus the largest worker's. Prints the curve and the ratios against
the smallest size (the reference run): per-row figures that stay flat or fall mean the cost
grows no worse than linearly.

    python benchmarks/size.py [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def generate(n: int, seed: int = 0):
    """A binary task: 6 numeric columns (3 informative), 2 categorical (one informative)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6))
    plan = rng.choice(["basic", "plus", "pro", "team"], size=n)
    region = rng.choice([f"r{i}" for i in range(12)], size=n)
    logit = 1.2 * x[:, 0] - 0.8 * x[:, 1] + 0.5 * x[:, 2] * x[:, 0] + (plan == "pro") * 0.9
    y = rng.random(n) < 1 / (1 + np.exp(-logit))
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(6)])
    frame["plan"], frame["region"], frame["target"] = plan, region, np.where(y, "yes", "no")
    return frame


def one(n: int) -> dict:
    from mlflow_agentic.frontdoor.api import search

    frame = generate(n)
    tmp = Path(tempfile.mkdtemp(prefix="bench-size-"))
    started = time.perf_counter()
    result = search(frame, "target", tracking_uri=f"sqlite:///{tmp}/mlflow.db",
                    trainers=["linear", "hist_gradient_boosting"], cv=3, max_iterations=7,
                    patience=100, n_jobs=2, register=False, diagnostics=False, say=print)
    wall = time.perf_counter() - started
    main_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"rows": n, "attempts": len(result.run.attempts), "wall": wall,
            "fit": result.run.fit_seconds, "main_mb": main_mb, "worker_mb": child_mb,
            "frame_mb": frame.memory_usage(deep=True).sum() / 2**20,
            "holdout": result.holdout.selected.holdout if result.holdout.selected else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(one(args.one)))
        return
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True,
                             text=True, cwd=ROOT)
        line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            raise SystemExit(out.stderr[-3000:])
        rows.append(json.loads(line.removeprefix("RESULT ")))
        print(f"done {n} rows in {rows[-1]['wall']:.1f}s", flush=True)
    ref = rows[0]
    print(f"\n{'rows':>9}{'attempts':>9}{'wall s':>9}{'fit s':>8}{'us/row':>8}{'x ref':>7}"
          f"{'peak main MB':>13}{'peak worker MB':>15}{'data MB':>9}{'bytes/row':>10}")
    for r in rows:
        peak = r["main_mb"] + r["worker_mb"]
        per_row = r["wall"] / r["rows"] * 1e6
        print(f"{r['rows']:>9}{r['attempts']:>9}{r['wall']:>9.1f}{r['fit']:>8.1f}"
              f"{per_row:>8.1f}{per_row / (ref['wall'] / ref['rows'] * 1e6):>7.2f}"
              f"{r['main_mb']:>13.0f}{r['worker_mb']:>15.0f}{r['frame_mb']:>9.1f}"
              f"{peak * 2**20 / r['rows']:>10.0f}")
    print("\nx ref: wall time per row against the smallest size (below 1: better than linear). "
          "Peak memory includes the interpreter and libraries (~300 MB per process), which "
          "dominate small sizes.")


if __name__ == "__main__":
    main()
