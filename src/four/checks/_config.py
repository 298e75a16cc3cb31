"""QICTConfig to JSON and back, so a stored trace can be replayed under its own config."""

from __future__ import annotations

from collections.abc import Mapping

from four._checked import checked
from four._types import JSON
from four.quaternary import QICTConfig
from four.quaternary._canonical import CONFIG_COUNTS as _COUNTS
from four.quaternary._canonical import CONFIG_SETS as _SETS


@checked
def config_to_json(config: QICTConfig) -> dict[str, JSON]:
    """A config as JSON (sets sorted, so equal configs give equal text)."""
    out: dict[str, JSON] = {name: sorted(getattr(config, name)) for name in _SETS}
    return out | {name: getattr(config, name) for name in _COUNTS}


@checked
def config_from_json(data: Mapping[str, JSON]) -> QICTConfig:
    """Read back what ``config_to_json`` wrote; raises ValueError on a malformed config
    (``QICTConfig`` checks the counts)."""
    try:
        for name in _SETS:
            value = data[name]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TypeError(f"{name} must be a list of strings")
        sets = {name: frozenset(data[name]) for name in _SETS}  # type: ignore[arg-type]
        return QICTConfig(**sets, **{name: data[name] for name in _COUNTS})  # type: ignore[arg-type]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed QICT config: {exc}") from None
