"""Package exports imported on first use, so importing a package (and the CLI's ``--help``)
does not pull in scikit-learn, MLflow and the trainers until something needs them."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_getattr(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``exports`` (public name -> defining module)."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module protocol's name
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
