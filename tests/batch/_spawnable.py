"""make_run for ``AsyncPool(processes=N)``: defined at a module's top level, so it
pickles and each worker process imports it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from four import arun
from four.batch import RunContext
from four.execute import local_env
from four.parse import regex_parse
from four.trajectory import save_trajectory
from tests.batch._agents import AsyncScripted


@dataclass(frozen=True)
class AsyncScriptedRun:
    """``arun`` with an async scripted model (each reply after ``delay`` s, costing
    ``cost``) and local bash; ``{id}`` in a reply is the item's id. Each run writes its
    worker's pid in ``ctx.output_dir/pid``."""

    replies: tuple[str, ...]
    delay: float = 0.0
    cost: float = 0.0
    max_steps: int = 50

    async def __call__(self, ctx: RunContext) -> Path:
        (ctx.output_dir / "pid").write_text(str(os.getpid()))
        return await arun(
            ctx.meter(AsyncScripted([r.replace("{id}", ctx.id) for r in self.replies],
                                    self.delay, self.cost)),
            regex_parse(),
            local_env(timeout=60),
            save_trajectory(ctx.output_dir),
            prompt=ctx.task,
            max_steps=self.max_steps,
            watch=ctx.watch,
        )  # fmt: skip
