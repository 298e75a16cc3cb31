"""QICTConfig to JSON and back, so a stored trace can be replayed under its own config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from four._checked import checked
from four._types import JSON
from four.quaternary import QICTConfig

_SETS = ("failure_alphabet", "evidence_alphabet", "compute_alphabet", "dependency_alphabet")
_OPTIONAL_SETS = ("admissible_failures", "admissible_dependencies")
_BUDGETS = ("evidence_budget", "compute_budget", "dependency_budget")


@checked
def config_to_json(config: QICTConfig) -> dict[str, JSON]:
    """A config as JSON (sets sorted, so equal configs give equal text)."""
    out: dict[str, JSON] = {name: sorted(getattr(config, name)) for name in _SETS}
    for name in _OPTIONAL_SETS:
        out[name] = sorted(getattr(config, name))
    for name in _BUDGETS:
        out[name] = getattr(config, name)
    out["lease_ticks"] = config.lease_ticks
    return out


@checked
def config_from_json(data: Mapping[str, JSON]) -> QICTConfig:
    """Read back what ``config_to_json`` wrote; raises ValueError on a malformed config."""

    def names(key: str) -> frozenset[str]:
        value = data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"{key} must be a list of strings")
        return frozenset(cast(list[str], value))

    def budget(key: str) -> int | None:
        value = data[key]
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise TypeError(f"{key} must be an integer or null")
        return value

    try:
        ticks = data["lease_ticks"]
        if not isinstance(ticks, int) or isinstance(ticks, bool):
            raise TypeError("lease_ticks must be an integer")
        return QICTConfig(
            failure_alphabet=names("failure_alphabet"),
            evidence_alphabet=names("evidence_alphabet"),
            compute_alphabet=names("compute_alphabet"),
            dependency_alphabet=names("dependency_alphabet"),
            evidence_budget=budget("evidence_budget"),
            compute_budget=budget("compute_budget"),
            dependency_budget=budget("dependency_budget"),
            admissible_failures=names("admissible_failures"),
            admissible_dependencies=names("admissible_dependencies"),
            lease_ticks=ticks,
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed QICT config: {exc}") from None
