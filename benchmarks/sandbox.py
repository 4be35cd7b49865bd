"""Sandbox overhead: one code-mode candidate (a preprocessing + logistic regression pipeline,
3 CV folds, a refit, a pickle round trip) fitted in-process (the reference), and as the engine
runs it, in fresh Docker containers and in host subprocesses: one per fold (two at a time, as
on 2 cores), then one for the refit, on the same churn rows.

    python benchmarks/sandbox.py [--rows 5634] [--repeat 3] [--load]

Prints seconds per candidate (median of ``--repeat``) and the ratio to the in-process fit: what
a candidate pays for its container (start, imports, files in and out). ``--load`` keeps one
core busy with a second CPU-bound process meanwhile. Needs the image (`mlflow-agentic sandbox
build`) and a Docker daemon.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = (ROOT / "tests" / "test_sandbox.py").read_text().split('PLAIN = """')[1].split('"""')[0]


def in_process(features, y, folds) -> float:
    from sklearn.base import clone

    started = time.perf_counter()
    namespace: dict = {}
    exec(CODE, namespace)  # noqa: S102 - the benchmark's own pipeline
    template = namespace["build_pipeline"]({})
    for k in sorted(set(folds)):
        test = folds == k
        clone(template).fit(features[~test], y[~test]).predict_proba(features[test])
    pickle.loads(pickle.dumps(clone(template).fit(features, y)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5634)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--load", action="store_true")
    args = parser.parse_args()
    import numpy as np
    import pandas as pd

    from mlflow_agentic.sandbox import DockerSandbox, HostSandbox, SandboxJob
    from mlflow_agentic.sandbox.runners import run_all

    frame = pd.read_csv(ROOT / "examples" / "churn.csv").iloc[:args.rows]
    features = frame.drop(columns=["Churn", "customerID"])
    features["TotalCharges"] = pd.to_numeric(features["TotalCharges"], errors="coerce").fillna(0)
    y = (frame["Churn"] == "Yes").astype(int).to_numpy()
    folds = np.arange(len(frame)) % 3
    jobs = [SandboxJob(CODE, "binary", (0, 1), train=features[folds != k], target=y[folds != k],
                       rows=features[folds == k]) for k in range(3)]
    refit = SandboxJob(CODE, "binary", (0, 1), train=features, target=y, save_model=True)

    def engine_way(sandbox) -> float:
        started = time.perf_counter()
        results = [*run_all(sandbox, jobs, parallel=2), sandbox.run(refit)]
        assert all(r.ok for r in results), [r.error for r in results]
        return time.perf_counter() - started

    docker, host = DockerSandbox().check(), HostSandbox()
    load = (subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.load else None)
    try:
        timings = {"in-process (reference)": [], "docker containers": [],
                   "host subprocesses": []}
        for _ in range(args.repeat):
            timings["in-process (reference)"].append(in_process(features, y, folds))
            for name, sandbox in (("docker containers", docker), ("host subprocesses", host)):
                timings[name].append(engine_way(sandbox))
    finally:
        if load is not None:
            load.kill()
    reference = statistics.median(timings["in-process (reference)"])
    print(f"one candidate on {len(frame)} churn rows, 3 folds + refit + pickle, median of "
          f"{args.repeat}{' (one core kept busy)' if args.load else ''}:")
    for name, values in timings.items():
        median = statistics.median(values)
        print(f"  {name:24s} {median:6.2f} s   x{median / reference:5.2f}   "
              f"overhead {median - reference:+.2f} s")


if __name__ == "__main__":
    main()
