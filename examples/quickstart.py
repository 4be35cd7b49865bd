"""The Python API in one screen: search churn with Optuna, track it in MLflow, register the best.

Run from the project root:  python examples/quickstart.py
Then browse:                 mlflow ui --backend-store-uri sqlite:///mlflow.db
"""

from pathlib import Path

from mlflow_agentic import AgenticAutoML, Dataset, DeterministicVerifier, OptunaProposer
from mlflow_agentic.tracking import MlflowTracker

HERE = Path(__file__).parent

dataset = Dataset.from_path(HERE / "churn.csv")  # target "Churn" is picked by its name
print(dataset.describe())

tracker = MlflowTracker(register_name="churn-agentic")  # sqlite:///mlflow.db unless configured
automl = AgenticAutoML(
    OptunaProposer(seed=0),
    verifier=DeterministicVerifier(margin=0.01),
    max_iterations=8,
    patience=3,
    cv=5,
    trainers=["linear", "hist_gradient_boosting", "xgboost"],
    observers=[tracker],
)
run = automl.solve(dataset)

print(run.summary())
for attempt in run.leaderboard()[:5]:
    print(f"{attempt.index:>3} {attempt.candidate.trainer:<24} {attempt.score:.4f} "
          f"{attempt.status}")
print(f"registered: models:/churn-agentic@challenger (version {tracker.model_version.version})")
