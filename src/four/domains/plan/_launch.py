"""A launch's settings: where its agents work and how they run (what ``four plan`` was
told, or what an existing launch's ``four.toml`` says)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from four._types import JSON
from four.observe._doctor import span


@dataclass(frozen=True, slots=True)
class Launch:
    """Where a launch goes and how its runs run.

    ``folder``: the launch folder (tasks.jsonl, four.toml, PLAN.md, held-out files);
    ``workspace``: where the agents work (their ``cwd``); ``env``, ``image``: where their
    commands run; ``model`` or ``local``, ``api_base``: the agents' model; ``workers``:
    runs at once; ``max_steps``, ``timeout``, ``cost_limit``: each run's budget (a task
    may ask fewer steps); ``command_timeout``: one command's; ``check_timeout``: one
    check's at validation; ``feedback``: what a failing check tells the model;
    ``window``: the agents' model's context (tokens), ``prices``: USD per prompt and
    completion token, both for the cost bound (None: unknown).
    """

    folder: Path
    workspace: Path
    env: str = "local"
    image: str | None = None
    model: str | None = None
    local: str | None = None
    api_base: str | None = None
    workers: int = 1
    max_steps: int = 30
    timeout: float = 1800.0
    cost_limit: float | None = None
    command_timeout: float = 120.0
    check_timeout: float = 120.0
    feedback: str = "verdict"
    window: int | None = None
    prices: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.workers < 1 or self.max_steps < 1:
            raise ValueError("workers and max_steps must be at least 1")
        if self.timeout <= 0 or self.check_timeout <= 0 or self.command_timeout <= 0:
            raise ValueError("timeout, check_timeout and command_timeout must be above 0")
        if self.env == "docker" and not self.image:
            raise ValueError("env docker needs an image")

    def settings(self) -> dict[str, JSON]:
        """What ``four.toml`` holds: ``four batch``'s flags, by their long names."""
        data: dict[str, JSON] = {}
        if self.local is not None:
            data["local"] = self.local
        elif self.model:
            data["model"] = self.model
        if self.api_base:
            data["api-base"] = self.api_base
        data["env"] = self.env
        if self.image:
            data["image"] = self.image
        data["workers"] = self.workers
        data["max-steps"] = self.max_steps
        data["timeout"] = self.timeout
        data["command-timeout"] = self.command_timeout
        if self.cost_limit is not None:
            data["cost-limit"] = self.cost_limit
        return data


@dataclass(frozen=True, slots=True)
class Cost:
    """What a launch costs at most: model calls, tokens (None: the window is unknown),
    USD (None: no price known) and wall-clock seconds."""

    steps: int
    tokens: int | None
    usd: float | None
    wall: float
    workers: int = 1

    def lines(self) -> list[str]:
        tokens = (
            f"at most {self.tokens:,} (each call's prompt fills at most the context window)"
            if self.tokens is not None
            else "not bounded here: the context window is unknown"
        )
        usd = f"at most ${self.usd:,.2f}" if self.usd is not None else "unknown: no price is known"
        return [
            f"- model calls: at most {self.steps:,} (each task's max_steps, summed)",
            f"- tokens: {tokens}",
            f"- cost: {usd}",
            f"- wall time: at most {span(self.wall)} (rounds of {self.workers} runs at once, "
            "each stopped at its --timeout)",
        ]


def cost(launch: Launch, steps: list[int]) -> Cost:
    """The bound of a launch whose tasks take at most ``steps`` model calls each."""
    total = sum(steps)
    tokens = total * launch.window if launch.window else None
    usd = None
    if tokens is not None and launch.prices is not None:
        usd = tokens * max(launch.prices)
    if launch.cost_limit is not None:
        capped = launch.cost_limit * len(steps)
        usd = capped if usd is None else min(usd, capped)
    rounds = math.ceil(len(steps) / launch.workers)
    return Cost(total, tokens, usd, rounds * launch.timeout, launch.workers)
