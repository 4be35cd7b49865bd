"""What scoring a fold's ROC AUC costs: scikit-learn's ``roc_auc_score`` (the reference)
against the metric's rank formula (``core.metrics.rank_aucs``), in one process, on fold-sized
outputs with ties (binary, and one-vs-rest over 10 classes). A search scores every fold of
every attempt on its main thread, and the greedy ensemble scores hundreds of blends.

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

    rng = np.random.default_rng(0)
    for rows, n_classes in ((500, 2), (5_000, 2), (50_000, 2), (2_000, 10)):
        classes = tuple(f"c{j}" for j in range(n_classes))
        y = rng.choice(np.array(classes, dtype=object), rows)
        raw = np.round(rng.random((rows, n_classes)), 3) + 1e-3  # ties, which count a half
        proba = raw / raw.sum(axis=1, keepdims=True)
        if n_classes == 2:
            metric = METRICS["roc_auc"]
            truth, scores, kwargs = y == classes[1], proba[:, 1], {}
        else:
            metric = METRICS["roc_auc_ovr"]
            truth, scores, kwargs = y, proba, {"multi_class": "ovr", "labels": list(classes)}

        def reference(truth=truth, scores=scores, kwargs=kwargs) -> float:
            return float(roc_auc_score(truth, scores, **kwargs))

        def ours(metric=metric, y=y, proba=proba, classes=classes) -> float:
            return metric.score(y, proba=proba, classes=classes)

        theirs, mine = per_call(reference, args.calls), per_call(ours, args.calls)
        print(f"{rows:>6} rows, {n_classes:>2} classes: scikit-learn {theirs * 1e3:.2f} ms, "
              f"ranks {mine * 1e3:.2f} ms a call; ranks / scikit-learn = {mine / theirs:.3f} "
              f"(difference {abs(ours() - reference()):.1e})")


if __name__ == "__main__":
    main()
