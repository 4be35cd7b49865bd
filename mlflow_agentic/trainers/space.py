"""Search-space primitives, independent of any optimiser (Optuna, an LLM, a user's JSON)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution


@dataclass(frozen=True)
class IntParam:
    low: int
    high: int
    log: bool = False

    def contains(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and (
            self.low <= value <= self.high)

    def coerce(self, value: Any) -> int:
        """An int from a proposer's value ("200", 200.0); ValueError if it is not one."""
        if isinstance(value, bool):
            raise ValueError(f"expected an integer, got {value!r}")
        number = float(value)
        if not math.isfinite(number) or number != int(number):
            raise ValueError(f"expected an integer, got {value!r}")
        return int(number)

    def suggest(self, trial: optuna.Trial, name: str) -> int:
        return trial.suggest_int(name, self.low, self.high, log=self.log)

    def distribution(self) -> BaseDistribution:
        from optuna.distributions import IntDistribution

        return IntDistribution(self.low, self.high, log=self.log)

    def describe(self) -> str:
        return f"int in [{self.low}, {self.high}]{' (log)' if self.log else ''}"


@dataclass(frozen=True)
class FloatParam:
    low: float
    high: float
    log: bool = False

    def contains(self, value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and (
            self.low <= value <= self.high)

    def coerce(self, value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError(f"expected a number, got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"expected a finite number, got {value!r}")
        return number

    def suggest(self, trial: optuna.Trial, name: str) -> float:
        return trial.suggest_float(name, self.low, self.high, log=self.log)

    def distribution(self) -> BaseDistribution:
        from optuna.distributions import FloatDistribution

        return FloatDistribution(self.low, self.high, log=self.log)

    def describe(self) -> str:
        return f"float in [{self.low:g}, {self.high:g}]{' (log)' if self.log else ''}"


@dataclass(frozen=True)
class CategoricalParam:
    choices: tuple

    def contains(self, value: Any) -> bool:
        return any(value == c and type(value) is type(c) for c in self.choices)

    def coerce(self, value: Any) -> Any:
        for choice in self.choices:
            if value == choice or (isinstance(value, str) and value == str(choice)):
                return choice
        is_none = value is None or (isinstance(value, str) and value.lower() in ("none", "null"))
        if is_none and None in self.choices:
            return None
        raise ValueError(f"expected one of {list(self.choices)}, got {value!r}")

    def suggest(self, trial: optuna.Trial, name: str) -> Any:
        return trial.suggest_categorical(name, list(self.choices))

    def distribution(self) -> BaseDistribution:
        from optuna.distributions import CategoricalDistribution

        return CategoricalDistribution(list(self.choices))

    def describe(self) -> str:
        return f"one of {list(self.choices)}"


ParamSpec = IntParam | FloatParam | CategoricalParam
