"""V2 environments: run an ``Action`` and return an ``Observation``, or end the run.

    local_env()          each command in a fresh ``bash -c`` on this machine
    shell_env()          one persistent bash (``cd`` and exports carry over)
    super_env()          ``local_env`` with larger limits
    sandbox_env()        each command under bubblewrap: read-only system, one writable folder
    docker_env(image)    each command in one Docker container, removed at the end
    Workspace(root)      the files that edits may change: paths outside, and symlinks, refused
    tool_host(kind, dir) the run's environment for a domain's tools too (a kernel, a type
                         checker, a compiler): each contained as a command of it is
    alocal_env()         ``local_env`` awaited, for ``arun`` (read on the event loop)
    ashell_env()         ``shell_env`` awaited, for ``arun``
    note_repeats(V2)     any of them, warning the model when a command repeats itself
                         (and telling it how to run Python it typed into bash)

Every environment shares one contract (docs/components.md: bash, stdin closed, a timeout
that kills every process of the command, bounded output, secrets kept out, ``Limits``).
"""

from four._secrets import SECRET_PATTERNS
from four.execute._async import AsyncLocalEnv, AsyncShellEnv, alocal_env, ashell_env
from four.execute._contain import DEFAULT_LIMITS, Contained, Containment, Limits, containment
from four.execute._docker import DockerEnv, docker_env
from four.execute._local import LocalEnv, local_env, shell_env, super_env
from four.execute._output import (
    DEFAULT_INHERIT,
    EXIT_SIGNAL,
    QUIET_ENV,
    TIMEOUT_RETURNCODE,
    OutputBuffer,
    command_env,
)
from four.execute._repeats import NoteRepeats, note_repeats
from four.execute._sandbox import SandboxEnv, sandbox_env
from four.execute._shell import ShellEnv
from four.execute._tools import ToolHost, ToolRun, tool_host
from four.execute._workspace import Refused, Workspace, Written

__all__ = [
    "DEFAULT_INHERIT",
    "DEFAULT_LIMITS",
    "EXIT_SIGNAL",
    "QUIET_ENV",
    "SECRET_PATTERNS",
    "TIMEOUT_RETURNCODE",
    "AsyncLocalEnv",
    "AsyncShellEnv",
    "Contained",
    "Containment",
    "DockerEnv",
    "Limits",
    "LocalEnv",
    "NoteRepeats",
    "OutputBuffer",
    "Refused",
    "SandboxEnv",
    "ShellEnv",
    "ToolHost",
    "ToolRun",
    "Workspace",
    "Written",
    "alocal_env",
    "ashell_env",
    "command_env",
    "containment",
    "docker_env",
    "local_env",
    "note_repeats",
    "sandbox_env",
    "shell_env",
    "super_env",
    "tool_host",
]
