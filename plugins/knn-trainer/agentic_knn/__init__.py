"""A k-nearest-neighbours trainer for mlflow-agentic, installed through the entry-point group
``mlflow_agentic.trainers`` (see this package's pyproject.toml)."""

from __future__ import annotations

from mlflow_agentic.trainers import CategoricalParam, IntParam, Trainer


def _model(task: str, params: dict, seed: int):
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

    cls = KNeighborsRegressor if task == "regression" else KNeighborsClassifier
    return cls(n_neighbors=int(params["n_neighbors"]), weights=params["weights"],
               p=int(params["p"]))


def _space(dataset) -> dict:
    return {"n_neighbors": IntParam(3, max(4, min(200, dataset.n_rows // 20)), log=True),
            "weights": CategoricalParam(("uniform", "distance")),
            "p": CategoricalParam((1, 2))}


def _defaults(dataset) -> dict:
    return {"n_neighbors": min(15, max(3, dataset.n_rows // 40)), "weights": "distance", "p": 2}


KNN = Trainer(
    "knn",
    build_model=_model,
    space=_space,
    defaults=_defaults,
    preprocessing="scaled",  # impute, scale and one-hot in front of the model: distances need it
    description="k-nearest neighbours on scaled features (example plugin package)",
)
