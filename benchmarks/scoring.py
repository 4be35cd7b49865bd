"""What scoring a fold's binary ROC AUC costs: scikit-learn's ``roc_auc_score`` (the reference)
against the metric's rank formula (``core.metrics.rank_auc``), in one process, on fold-sized
outputs with ties. A search scores every fold of every attempt on its main thread, and the
greedy ensemble scores hundreds of blends.

    python benchmarks/scoring.py [--calls N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def per_call(f, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    from sklearn.metrics import roc_auc_score

    from mlflow_agentic.core.metrics import METRICS

    metric = METRICS["roc_auc"]
    rng = np.random.default_rng(0)
    for rows in (500, 5_000, 50_000):
        y = np.where(rng.random(rows) < 0.2, "yes", "no").astype(object)
        p = np.round(rng.random(rows), 3)
        proba = np.column_stack([1 - p, p])
        reference = per_call(lambda: roc_auc_score(y == "yes", p), args.calls)
        ours = per_call(lambda: metric.score(y, proba=proba, classes=("no", "yes")), args.calls)
        gap = abs(metric.score(y, proba=proba, classes=("no", "yes"))
                  - roc_auc_score(y == "yes", p))
        print(f"{rows:>6} rows: scikit-learn {reference * 1e3:.2f} ms, ranks {ours * 1e3:.2f} ms "
              f"a call; ranks / scikit-learn = {ours / reference:.3f} (difference {gap:.1e})")


if __name__ == "__main__":
    main()
