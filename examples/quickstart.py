"""The Python API in one screen: the same honest search as `mlflow-agentic run`.

The holdout is sealed before any proposer exists, the training rows are briefed (profile,
leakage findings, CV advice), Optuna proposes, the engine cross-validates and verifies, every
attempt is scored on the holdout, and the verified best is registered with its evidence.

Run from the project root:  python examples/quickstart.py
Then browse:                 mlflow ui --backend-store-uri sqlite:///mlflow.db
"""

from pathlib import Path

from mlflow_agentic import search

HERE = Path(__file__).parent

result = search(
    HERE / "churn.csv",  # target "Churn" is picked by its name; or target="Churn"
    proposer="optuna",
    trainers=["linear", "hist_gradient_boosting", "xgboost"],
    max_iterations=8,
    patience=3,
    register_name="churn-agentic",  # tracking: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db
)

print(result.summary())  # attempts, the best, and its CV vs holdout gap
for attempt in result.run.leaderboard()[:5]:
    print(f"{attempt.index:>3} {attempt.candidate.trainer:<24} {attempt.score:.4f} "
          f"{attempt.status}")
if result.model_version is not None:
    print(f"registered: models:/{result.model_version.name} version "
          f"{result.model_version.version} ({result.alias_note})")
else:  # not better than the registered @challenger beyond the noise: no new version
    print(f"not registered: {result.alias_note}")
print(f"search run: {result.run_id}")
