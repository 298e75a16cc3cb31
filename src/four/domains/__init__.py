"""Domains: sets of functions for the same loop (V1, V2, emit, a check, a system prompt).

A domain never changes the loop. Bash is the default domain; others (``notebook``, ...)
live in ``four.domains.NAME`` and are imported only when asked for by name, so
``import four`` and ``four --help`` load no optional extra.

>>> bash = get_domain("bash")
>>> bash.name, "bash" in domain_names()
('bash', True)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from four._checked import Checked, checked
from four.types import Execute, Parse, Recorder, Verify

if TYPE_CHECKING:
    from four.trajectory._sign import SigningKey

__all__ = ["Domain", "DomainError", "DomainSetup", "domain_names", "get_domain"]


@dataclass(frozen=True, slots=True)
class DomainSetup(Checked):
    """What one run of a domain is given (one ``four run --domain X``).

    ``workspace`` is where the agent works (None: the environment's default, here or a
    fresh folder); ``output_dir`` where the trajectory and the domain's artifacts go;
    ``command_timeout`` the seconds one action may run (None: the domain's default);
    ``env`` where actions run (``local``, ``persistent``, ``sandbox``, ``docker``) where
    the domain has that choice; ``image`` the container image for ``docker``;
    ``signing_key`` what signs the trajectory's seal (see ``save_trajectory``).
    """

    workspace: Path | None
    output_dir: Path
    command_timeout: float | None = None
    env: str = "local"
    image: str | None = None
    signing_key: SigningKey | None = None


@dataclass(frozen=True, slots=True)
class Domain(Checked):
    """One domain's functions, each made fresh for a run.

    ``environment`` makes V2 for the run; ``emit`` and ``check`` are given that same V2,
    because a domain's artifact and its judgement are about what its environment did
    (a notebook's outputs, a built binary). ``emit`` is a ``Recorder``: it streams the
    trajectory (sealed as usual) and writes the domain's artifact beside it. ``check``
    says what ``--check ARG`` means here (None when no check applies).
    ``replay_workspace(trajectory, workspace, scratch)``, for a domain that edits its
    workspace in place, makes the folder ``four replay`` runs in: a copy of the recorded
    workspace as it was when the run began (None: it cannot be rebuilt).
    """

    name: str
    summary: str
    system: str
    parse: Callable[[], Parse]
    environment: Callable[[DomainSetup], Execute]
    emit: Callable[[DomainSetup, Execute], Recorder[Path]]
    check: Callable[[DomainSetup, Execute, str | None], Verify | None]
    replay_workspace: Callable[[Path, Path | None, Path], Path | None] | None = None


class DomainError(ValueError):
    """An unknown domain, or one whose extra is not installed: its message says the fix."""


# name -> ("module:attribute", the extra it needs, one line for --help). Imported on demand.
_REGISTRY: dict[str, tuple[str, str | None, str]] = {
    "bash": (
        "four.domains._bash:DOMAIN",
        None,
        "shell commands in ```bash blocks, run in --env (the default)",
    ),
    "python": (
        "four.domains.python:DOMAIN",
        "python",
        "Python code: file edits judged by ruff and mypy --strict; --check runs the tests",
    ),
    "notebook": (
        "four.domains.notebook._domain:DOMAIN",
        "notebook",
        "Python cells in one Jupyter kernel, saved as an .ipynb that must re-run",
    ),
    "cli": (
        "four.domains.cli:DOMAIN",
        None,
        "a command-line tool in C: compiled with -Werror, run sandboxed, with a man page",
    ),
    "cli-go": (
        "four.domains.cli:GO_DOMAIN",
        None,
        "the cli domain in Go: go build and go vet, run sandboxed, with a man page",
    ),
    "cli-rust": (
        "four.domains.cli:RUST_DOMAIN",
        None,
        "the cli domain in Rust: cargo, offline, run sandboxed, with a man page",
    ),
}


def domain_names() -> list[str]:
    """The registered domains, default first.

    >>> domain_names()[0]
    'bash'
    """
    return list(_REGISTRY)


def domain_summary(name: str) -> str:
    """The one-line summary of a registered domain, without importing it."""
    return _REGISTRY[name][2]


@checked
def get_domain(name: str) -> Domain:
    """The domain called ``name``, imported now. An unknown name, or a domain whose
    extra is missing, raises ``DomainError`` saying what to do."""
    entry = _REGISTRY.get(name)
    if entry is None:
        raise DomainError(f"unknown domain {name!r}: use one of {', '.join(_REGISTRY)}")
    where, extra, _ = entry
    module_name, attribute = where.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if extra is None:
            raise
        raise DomainError(
            f"the {name} domain needs the {extra!r} extra ({exc.name or exc} is missing): "
            f"pip install 'four-loop[{extra}]'"
        ) from None
    domain = getattr(module, attribute)
    if not isinstance(domain, Domain):
        raise TypeError(f"{where} is not a Domain")
    return domain
