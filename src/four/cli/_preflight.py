"""Checks made before the first step: is the model known, is its key there, is the server
up, can the trajectory be written.

A run that cannot start should say why at once, not after the first (billed) step.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from four.cli._errors import UsageError

if TYPE_CHECKING:
    from four.observe._check import Check
    from four.observe._endpoint import Server


def hosted_name(model: str, api_base: str | None) -> str:
    """``model`` as litellm is to be told it: at ``api_base``, a name with no provider
    prefix is sent as ``openai/<name>``."""
    from four.invoke._lazy import litellm_module

    if api_base:
        try:
            litellm_module().get_llm_provider(model, api_base=api_base)
        except Exception:
            return f"openai/{model}"
    return model


def resolve(
    model: str, api_base: str | None, api_key: str | None = None, local: str | None = None
) -> tuple[str, Server | None]:
    """The model name to use and what its server said of itself, or a ``UsageError``:
    for the ``local`` model, ``local_ready``; else ``four doctor``'s checks of the
    provider's key, or of the server at ``api_base``."""
    if local is not None:
        local_ready(local)
        return local, None
    from four.observe._doctor import provider_key
    from four.observe._endpoint import endpoint, read_server

    model = hosted_name(model, api_base)
    if api_base:
        server = read_server(api_base, api_key)
        refuse(endpoint(model, server))
        return model, server
    refuse(provider_key(model, None))
    return model, None


def local_ready(name: str) -> None:
    """The local model is pulled and its extra installed, or a ``UsageError``."""
    import importlib.util

    from returns.result import Failure

    from four.models import find_model

    found = find_model(name)
    if isinstance(found, Failure):
        raise UsageError(f"{found.failure()}; or give --model NAME for a hosted model")
    if importlib.util.find_spec("xllamacpp") is None:
        raise UsageError("--local needs the local extra: pip install 'four-loop[local]'")


def prompt_fits(model: str, server: Server | None, system: str, task: str) -> None:
    """The system prompt and the task fit the model's context window (when it is known),
    or a ``UsageError``."""
    from four.observe._doctor import context_fit, model_facts

    window = model_facts(model).context_window or (server.context_window if server else None)
    if window is not None:
        refuse(context_fit(system, task, window))


def refuse(check: Check) -> None:
    """A NO-GO check as the one-line usage error."""
    if check.status == "NO-GO":
        raise UsageError(check.detail)


def output_folder(text: str) -> None:
    """The folder trajectories go to made if missing, or a ``UsageError`` saying why it
    cannot be used: it is a file, it cannot be made or written (a read-only disk), it
    has (almost) no free space. Checked by writing, not by permission bits."""
    from four.observe._doctor import output_folder as check

    refuse(check(text, make=True, flag="-o"))


def held_out(check_files: Sequence[str]) -> dict[str, str]:
    """Each ``--check-files [DEST=]DIR``: where it goes in the workspace, and its folder.

    >>> held_out(["tests_hidden/", "t=/tmp/x"])
    {'tests_hidden': 'tests_hidden', 't': '/tmp/x'}
    """
    places = {}
    for given in check_files:
        destination, _, folder = given.rpartition("=")
        folder = folder.rstrip("/") or folder
        places[(destination or Path(folder).name).rstrip("/")] = folder
    return places
