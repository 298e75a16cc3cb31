"""Fixtures for the execute tests: every environment behind one factory, and service checks.

bubblewrap and Docker tests skip with the reason when the service is missing, and fail
instead when FOUR_REQUIRE_SERVICES=1 (as in CI, after tests/execute/setup_services.sh).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

import pytest
from returns.result import Result

from four import Action, ExecutionError, Observation, Submitted
from four.execute import local_env, shell_env
from four.execute._docker import LABEL, docker_env
from four.execute._sandbox import sandbox_env

TEST_IMAGE = os.environ.get("FOUR_TEST_IMAGE", "four-test:latest")
ENVS = ("local", "shell", "sandbox", "docker")


class Env(Protocol):
    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]: ...


class MakeEnv(Protocol):
    kind: str

    def __call__(
        self, timeout: float = 10.0, max_output: int = 10_000, env: Mapping[str, str] | None = None
    ) -> Env: ...


def need(problem: str | None) -> None:
    """Skip (or, with FOUR_REQUIRE_SERVICES=1, fail) when a service is missing."""
    if problem is None:
        return
    if os.environ.get("FOUR_REQUIRE_SERVICES") == "1":
        pytest.fail(f"required service missing: {problem}")
    pytest.skip(problem)


@functools.cache
def bwrap_problem() -> str | None:
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    try:
        done = subprocess.run(
            ["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot run: {exc}"
    return None if done.returncode == 0 else f"bwrap cannot run: {done.stderr.strip()}"


@functools.cache
def docker_problem() -> str | None:
    if shutil.which("docker") is None:
        return "no docker client"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
        if info.returncode != 0:
            return f"no Docker daemon answers `docker info`: {info.stderr.strip()[-300:]}"
        image = subprocess.run(
            ["docker", "image", "inspect", TEST_IMAGE], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker does not answer: {exc}"
    if image.returncode != 0:
        return f"no test image {TEST_IMAGE} (run tests/execute/setup_services.sh)"
    return None


def need_service(kind: str) -> None:
    """Skip (or fail, in CI) a test of ``kind`` whose service is missing: bwrap for the
    sandbox, a Docker daemon and the test image for docker."""
    if kind == "sandbox":
        need(bwrap_problem())
    if kind == "docker":
        need(docker_problem())


_IDS = "{{.ID}} {{.Names}}"
_SHARED: set[str] = set()  # the session's shared container: it lives until the session ends


def containers_left() -> list[str]:
    """The containers ``docker_env`` made for this process that still exist, but the
    session's shared one (``shared_container``: a test that ran before may have made it)."""
    listed = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={LABEL}={os.getpid()}", "--format", _IDS],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.splitlines()
    return [line.split()[0] for line in listed if line.split()[-1] not in _SHARED]


class _Factory:
    def __init__(self, kind: str, container: str | None = None) -> None:
        self.kind = kind
        self.container = container
        self.made: list[object] = []

    def __call__(
        self, timeout: float = 10.0, max_output: int = 10_000, env: Mapping[str, str] | None = None
    ) -> Env:
        made: Env
        if self.kind == "local":
            made = local_env(timeout, max_output, env=env)
        elif self.kind == "shell":
            made = shell_env(timeout, max_output, env=env)
        elif self.kind == "sandbox":
            made = sandbox_env(timeout, max_output, env=env)
        else:
            made = docker_env(TEST_IMAGE, timeout, max_output, env=env, container=self.container)
        self.made.append(made)
        return made

    def close(self) -> None:
        for made in self.made:
            close: Callable[[], None] | None = getattr(made, "close", None)
            if close is not None:
                close()


@pytest.fixture(scope="session")
def shared_container() -> Iterator[str]:
    """One container for the fault matrix (starting one costs most of a second)."""
    need(docker_problem())
    with docker_env(TEST_IMAGE) as env:
        name = env.container
        assert name is not None
        _SHARED.add(name)
        yield name
    _SHARED.discard(name)
    left = containers_left()
    assert left == [], f"containers left behind: {left}"


@pytest.fixture(params=ENVS)
def make_env(request: pytest.FixtureRequest) -> Iterator[MakeEnv]:
    kind: str = request.param
    container = None
    if kind == "sandbox":
        need(bwrap_problem())
    if kind == "docker":
        need(docker_problem())
        container = request.getfixturevalue("shared_container")
    factory = _Factory(kind, container)
    yield factory
    factory.close()


def alive(token: str) -> list[int]:
    """Pids of this machine's processes whose command line holds ``token`` (zombies have none)."""
    found = []
    mark = token.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if mark in f.read():
                    found.append(int(name))
        except OSError:
            continue
    return found
