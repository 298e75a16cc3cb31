"""Where a domain's run happens: its workspace and the run's environment (``--env``),
for the model's commands and the tools the domain runs (``four.execute``'s ``ToolHost``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from four.domains import DomainSetup
from four.execute._tools import HOST_KINDS, ToolHost, tool_host


def inside(folder: Path, workspace: Path) -> bool:
    """Whether ``folder`` is ``workspace`` or under it (links resolved).

    >>> inside(Path("/w/runs"), Path("/w")), inside(Path("/runs"), Path("/w"))
    (True, False)
    """
    where = folder.expanduser().resolve()
    space = workspace.expanduser().resolve()
    return where == space or space in where.parents


def hidden(setup: DomainSetup, workspace: Path) -> tuple[str, ...]:
    """The run's output folder when it is inside ``workspace``, named as a sandbox sees
    it (under the workspace as given, its links kept): the sandbox mounts an empty
    folder over it."""
    if not inside(setup.output_dir, workspace):
        return ()
    rel = setup.output_dir.expanduser().resolve().relative_to(workspace.resolve())
    return (os.path.join(os.path.abspath(workspace), rel),)


def domain_host(
    setup: DomainSetup, timeout: float, *, name: str, readable: Sequence[str] = ()
) -> ToolHost:
    """The run's environment for the domain ``name``: ``--env`` local, sandbox or docker,
    working in the setup's workspace (the current folder when none is given), each
    command under ``timeout`` seconds. ``readable``: host folders the domain's tools
    need to see in the sandbox (a toolchain). Raises ValueError for another ``--env``,
    or docker without an image."""
    if setup.env not in HOST_KINDS:
        raise ValueError(
            f"--domain {name} runs in --env local, sandbox or docker, not --env {setup.env}"
        )
    workspace = setup.workspace if setup.workspace is not None else Path.cwd()
    return tool_host(
        setup.env,
        workspace,
        timeout=timeout,
        image=setup.image,
        readable=readable,
        hide=hidden(setup, workspace),
    )
