"""V2 environments: run an ``Action`` and return an ``Observation``, or end the run.

    local_env()          each command in a fresh ``bash -c`` on this machine
    shell_env()          one persistent bash (``cd`` and exports carry over)
    super_env()          ``local_env`` with larger limits
    sandbox_env()        each command under bubblewrap: read-only system, one writable folder
    docker_env(image)    each command in one Docker container, removed at the end
    Workspace(root)      the files that edits may change: paths outside, and symlinks, refused
    tool_host(kind, dir) the run's environment, a domain's tools contained as its commands
    alocal_env()         ``local_env`` awaited, for ``arun`` (read on the event loop)
    ashell_env()         ``shell_env`` awaited, for ``arun``
    note_repeats(V2)     any of them, warning the model of repeats and of Python typed in bash

Every environment shares one contract: docs/components.md.
"""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # names load on first use
    from four._secrets import SECRET_PATTERNS as SECRET_PATTERNS
    from four.execute._async import AsyncLocalEnv as AsyncLocalEnv
    from four.execute._async import AsyncShellEnv as AsyncShellEnv
    from four.execute._async import alocal_env as alocal_env
    from four.execute._async import ashell_env as ashell_env
    from four.execute._contain import DEFAULT_LIMITS as DEFAULT_LIMITS
    from four.execute._contain import Contained as Contained
    from four.execute._contain import Containment as Containment
    from four.execute._contain import Limits as Limits
    from four.execute._contain import containment as containment
    from four.execute._docker import DockerEnv as DockerEnv
    from four.execute._docker import docker_env as docker_env
    from four.execute._local import LocalEnv as LocalEnv
    from four.execute._local import local_env as local_env
    from four.execute._local import shell_env as shell_env
    from four.execute._local import super_env as super_env
    from four.execute._output import DEFAULT_INHERIT as DEFAULT_INHERIT
    from four.execute._output import EXIT_SIGNAL as EXIT_SIGNAL
    from four.execute._output import QUIET_ENV as QUIET_ENV
    from four.execute._output import TIMEOUT_RETURNCODE as TIMEOUT_RETURNCODE
    from four.execute._output import OutputBuffer as OutputBuffer
    from four.execute._output import command_env as command_env
    from four.execute._repeats import NoteRepeats as NoteRepeats
    from four.execute._repeats import note_repeats as note_repeats
    from four.execute._sandbox import SandboxEnv as SandboxEnv
    from four.execute._sandbox import sandbox_env as sandbox_env
    from four.execute._shell import ShellEnv as ShellEnv
    from four.execute._tools import ToolHost as ToolHost
    from four.execute._tools import ToolRun as ToolRun
    from four.execute._tools import tool_host as tool_host
    from four.execute._workspace import Refused as Refused
    from four.execute._workspace import Workspace as Workspace
    from four.execute._workspace import Written as Written

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
