"""The built-in trainers. Search spaces scale with the number of training rows."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.types import is_classification
from mlflow_agentic.trainers.base import Trainer
from mlflow_agentic.trainers.space import CategoricalParam as Cat
from mlflow_agentic.trainers.space import FloatParam as Float
from mlflow_agentic.trainers.space import IntParam as Int

if TYPE_CHECKING:
    from mlflow_agentic.core.dataset_like import DatasetLike
    from mlflow_agentic.trainers.space import ParamSpec

Params = dict[str, Any]
"""A trainer's resolved hyperparameters."""

N_JOBS = 1
"""Models are single-threaded: ``engine.parallel`` runs one per core instead (see there why)."""


def _rounds_cap(dataset: DatasetLike) -> int:
    """Boosting rounds are a cap, not a cost: every booster stops early on a validation split of
    its own training rows (10%) after ``EARLY_STOP`` rounds without improvement. Large data can
    use more rounds before it stops improving."""
    return 1000 if dataset.n_rows <= 50_000 else 2000


EARLY_STOP = 20


def _early_stopped(model: Any, seed: int) -> Any:
    from mlflow_agentic.trainers.transforms import InnerValidationEarlyStopping

    return InnerValidationEarlyStopping(model, validation_fraction=0.1, rounds=EARLY_STOP,
                                        random_state=seed)


def _leaf_cap(dataset: DatasetLike, per: int, floor: int, ceiling: int) -> int:
    """Upper bound for a leaf-size parameter: grows with the rows, within [floor, ceiling]."""
    return int(min(ceiling, max(floor, dataset.n_rows // per)))


def _estimators_cap(dataset: DatasetLike) -> int:
    """More trees for small data (cheap), fewer for large data (each tree is expensive)."""
    return 500 if dataset.n_rows <= 50_000 else 300


# ---- linear ---------------------------------------------------------------------------------
def _linear_model(task: str, p: Params, seed: int) -> Any:
    if is_classification(task):
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=p["C"], class_weight=p["class_weight"], max_iter=2000)
    from sklearn.linear_model import Ridge

    return Ridge(alpha=p["alpha"])


def _linear_space(ds: DatasetLike) -> dict[str, ParamSpec]:
    if is_classification(ds.task):
        return {"C": Float(1e-3, 1e2, log=True), "class_weight": Cat((None, "balanced"))}
    return {"alpha": Float(1e-3, 1e3, log=True)}


def _linear_defaults(ds: DatasetLike) -> Params:
    if is_classification(ds.task):
        return {"C": 1.0, "class_weight": None}
    return {"alpha": 1.0}


# ---- bagged trees ---------------------------------------------------------------------------
def _forest(kind: str) -> Callable[[str, Params, int], Any]:
    def build(task: str, p: Params, seed: int) -> Any:
        from sklearn import ensemble

        name = ("RandomForest" if kind == "rf" else "ExtraTrees") + (
            "Classifier" if is_classification(task) else "Regressor")
        return getattr(ensemble, name)(
            n_estimators=p["n_estimators"], max_depth=p["max_depth"],
            min_samples_leaf=p["min_samples_leaf"], max_features=p["max_features"],
            n_jobs=N_JOBS, random_state=seed)

    return build


def _forest_space(ds: DatasetLike) -> dict[str, ParamSpec]:
    return {
        "n_estimators": Int(50, _estimators_cap(ds), log=True),
        "max_depth": Cat((None, 4, 8, 12, 16, 24)),
        "min_samples_leaf": Int(1, _leaf_cap(ds, 200, 5, 50), log=True),
        "max_features": Cat(("sqrt", 0.5, 1.0)),
    }


def _forest_defaults(ds: DatasetLike) -> Params:
    return {"n_estimators": 100, "max_depth": None, "min_samples_leaf": 1,
            "max_features": "sqrt" if is_classification(ds.task) else 1.0}


# ---- histogram gradient boosting ----------------------------------------------------------
def _hgb_model(task: str, p: Params, seed: int) -> Any:
    from sklearn import ensemble

    cls = (ensemble.HistGradientBoostingClassifier if is_classification(task)
           else ensemble.HistGradientBoostingRegressor)
    return cls(learning_rate=p["learning_rate"], max_iter=p["max_iter"],
               max_leaf_nodes=p["max_leaf_nodes"], min_samples_leaf=p["min_samples_leaf"],
               l2_regularization=p["l2_regularization"], random_state=seed,
               early_stopping=True, validation_fraction=0.1, n_iter_no_change=EARLY_STOP // 2)


def _hgb_space(ds: DatasetLike) -> dict[str, ParamSpec]:
    return {
        "learning_rate": Float(0.01, 0.3, log=True),
        "max_iter": Int(50, _rounds_cap(ds), log=True),  # a cap: early stopping decides
        "max_leaf_nodes": Int(8, _leaf_cap(ds, 50, 31, 128), log=True),
        "min_samples_leaf": Int(5, _leaf_cap(ds, 50, 40, 200), log=True),
        "l2_regularization": Float(0.0, 10.0),
    }


def _hgb_defaults(ds: DatasetLike) -> Params:
    return {"learning_rate": 0.1, "max_iter": _rounds_cap(ds), "max_leaf_nodes": 31,
            "min_samples_leaf": 20, "l2_regularization": 0.0}


# ---- xgboost --------------------------------------------------------------------------------
def _xgb_model(task: str, p: Params, seed: int) -> Any:
    import xgboost as xgb

    from mlflow_agentic.trainers.transforms import EncodedLabelClassifier

    common = dict(p, tree_method="hist", n_jobs=N_JOBS, random_state=seed, verbosity=0)
    if is_classification(task):
        return EncodedLabelClassifier(_early_stopped(xgb.XGBClassifier(**common), seed))
    return _early_stopped(xgb.XGBRegressor(**common), seed)


def _boost_space(ds: DatasetLike, leaves: bool) -> dict[str, ParamSpec]:
    space: dict[str, ParamSpec] = {
        "n_estimators": Int(50, _rounds_cap(ds), log=True),  # a cap: early stopping decides
        "learning_rate": Float(0.01, 0.3, log=True),
        "subsample": Float(0.5, 1.0),
        "colsample_bytree": Float(0.5, 1.0),
        "reg_lambda": Float(1e-3, 10.0, log=True),
    }
    if leaves:
        space["num_leaves"] = Int(8, _leaf_cap(ds, 20, 31, 256), log=True)
        space["min_child_samples"] = Int(5, _leaf_cap(ds, 50, 40, 200), log=True)
    else:
        space["max_depth"] = Int(2, 10)
        space["min_child_weight"] = Float(0.5, 20.0, log=True)
    return space


def _xgb_defaults(ds: DatasetLike) -> Params:
    return {"n_estimators": _rounds_cap(ds), "learning_rate": 0.1, "subsample": 1.0,
            "colsample_bytree": 1.0, "reg_lambda": 1.0, "max_depth": 6, "min_child_weight": 1.0}


# ---- lightgbm -------------------------------------------------------------------------------
def _lgbm_model(task: str, p: Params, seed: int) -> Any:
    import lightgbm as lgb

    cls = lgb.LGBMClassifier if is_classification(task) else lgb.LGBMRegressor
    return _early_stopped(cls(**p, subsample_freq=1 if p["subsample"] < 1 else 0, n_jobs=N_JOBS,
                              random_state=seed, verbose=-1), seed)


def _lgbm_defaults(ds: DatasetLike) -> Params:
    return {"n_estimators": _rounds_cap(ds), "learning_rate": 0.1, "subsample": 1.0,
            "colsample_bytree": 1.0, "reg_lambda": 1e-3, "num_leaves": 31,
            "min_child_samples": 20}


# ---- catboost -------------------------------------------------------------------------------
def _cat_model(task: str, p: Params, seed: int) -> Any:
    import catboost as cb

    cls = cb.CatBoostClassifier if is_classification(task) else cb.CatBoostRegressor
    return _early_stopped(cls(**p, random_seed=seed, thread_count=N_JOBS, verbose=False,
                              allow_writing_files=False), seed)


def _cat_space(ds: DatasetLike) -> dict[str, ParamSpec]:
    return {"iterations": Int(50, _rounds_cap(ds), log=True),  # a cap: early stopping decides
            "depth": Int(4, 10), "learning_rate": Float(0.02, 0.3, log=True),
            "l2_leaf_reg": Float(1.0, 30.0, log=True),
            "random_strength": Float(0.1, 10.0, log=True)}


def _cat_defaults(ds: DatasetLike) -> Params:
    return {"iterations": _rounds_cap(ds), "depth": 6, "learning_rate": 0.1, "l2_leaf_reg": 3.0,
            "random_strength": 1.0}


# ---- multi-layer perceptron ----------------------------------------------------------------
def _mlp_model(task: str, p: Params, seed: int) -> Any:
    """A neural network: another family for the ensemble (AutoGluon's tabular networks are
    where its ensembles differ most from a booster's). Stops on 10% of its training rows; a
    regression target is standardised, as the network's weights start at that scale."""
    from sklearn import neural_network

    common = dict(hidden_layer_sizes=(p["width"],) * p["layers"], alpha=p["alpha"],
                  learning_rate_init=p["learning_rate_init"], max_iter=p["max_iter"],
                  early_stopping=True, validation_fraction=0.1, n_iter_no_change=EARLY_STOP // 2,
                  random_state=seed)
    if is_classification(task):
        return neural_network.MLPClassifier(**common)
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.preprocessing import StandardScaler

    return TransformedTargetRegressor(neural_network.MLPRegressor(**common),
                                      transformer=StandardScaler())


def _epochs_cap(dataset: DatasetLike) -> int:
    """Epochs are a cap (early stopping decides); a large table's epoch is many more updates,
    so it needs fewer of them."""
    return 300 if dataset.n_rows <= 50_000 else 100


def _mlp_space(ds: DatasetLike) -> dict[str, ParamSpec]:
    return {"width": Int(32, 512, log=True), "layers": Int(1, 3),
            "alpha": Float(1e-6, 1.0, log=True), "learning_rate_init": Float(1e-4, 1e-2, log=True),
            "max_iter": Int(20, _epochs_cap(ds), log=True)}


def _mlp_defaults(ds: DatasetLike) -> Params:
    return {"width": 128, "layers": 2, "alpha": 1e-4, "learning_rate_init": 1e-3,
            "max_iter": min(200, _epochs_cap(ds))}


def builtin_trainers() -> list[Trainer]:
    """Built-ins, with lightgbm only when its library is installed (a core dependency; kept
    optional for environments that pin it out)."""
    trainers = [
        Trainer("linear", _linear_model, _linear_space, _linear_defaults, preprocessing="scaled",
                cost=1, description="logistic regression (classification) / ridge (regression)"),
        Trainer("random_forest", _forest("rf"), _forest_space, _forest_defaults,
                cost=3, description="random forest"),
        Trainer("extra_trees", _forest("et"), _forest_space, _forest_defaults, cost=3,
                description="extremely randomized trees"),
        Trainer("hist_gradient_boosting", _hgb_model, _hgb_space, _hgb_defaults,
                preprocessing="native", description="scikit-learn histogram gradient boosting"),
        Trainer("xgboost", _xgb_model, lambda ds: _boost_space(ds, leaves=False), _xgb_defaults,
                preprocessing="native", requirements=("xgboost",), description="XGBoost"),
    ]
    if importlib.util.find_spec("lightgbm") is not None:
        trainers.append(Trainer("lightgbm", _lgbm_model, lambda ds: _boost_space(ds, leaves=True),
                                _lgbm_defaults, preprocessing="native",
                                requirements=("lightgbm",), description="LightGBM"))
    trainers.append(Trainer("mlp", _mlp_model, _mlp_space, _mlp_defaults, preprocessing="scaled",
                            cost=3, on_request=True,
                            description="multi-layer perceptron (scikit-learn)"))
    if importlib.util.find_spec("catboost") is not None:
        trainers.append(Trainer("catboost", _cat_model, _cat_space, _cat_defaults,
                                preprocessing="native", requirements=("catboost",), cost=3,
                                description="CatBoost (ordered target statistics on the "
                                            "category columns)"))
    return trainers
