"""Checks made before the first step: is the model known, is its key there, is the server
up, can the trajectory be written.

A run that cannot start should say why at once, not after the first (billed) step.
"""

from __future__ import annotations

import errno
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType

from four.cli._errors import UsageError


def litellm() -> ModuleType:
    """litellm, imported the way the model layer imports it (offline price map, quiet)."""
    from four.invoke._lazy import litellm_module

    return litellm_module()


def resolve_model(model: str, api_base: str | None, api_key: str | None = None) -> str:
    """The model name to use, or a ``UsageError`` saying what is wrong.

    Without ``api_base``: litellm must know the provider, and the provider's API key
    must be set. With ``api_base`` (an OpenAI-compatible server): the server must answer,
    and when it lists its models, ``model`` must be one of them; a name with no
    provider prefix is sent as ``openai/<name>``.
    """
    lite = litellm()
    if api_base:
        try:
            lite.get_llm_provider(model, api_base=api_base)
        except Exception:
            model = f"openai/{model}"
        _probe_server(api_base, model, api_key)
        return model
    try:
        provider = lite.get_llm_provider(model)[1]
    except Exception:
        raise UsageError(
            f"unknown model {model!r}: litellm cannot tell its provider; name it as "
            "provider/model (e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5), "
            "or give --api-base for an OpenAI-compatible server"
        ) from None
    found = lite.validate_environment(model)
    missing = [str(k) for k in found.get("missing_keys", [])] if isinstance(found, dict) else []
    if missing:
        raise UsageError(f"missing API key for {model} ({provider}): set {' and '.join(missing)}")
    return model


def _probe_server(api_base: str, model: str, api_key: str | None) -> None:
    """GET <api_base>/models: unreachable is an error; a listed model must be there."""
    request = urllib.request.Request(api_base.rstrip("/") + "/models")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            data = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError:
        return  # the server answers; it just has no model list
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"cannot reach --api-base {api_base}: {reason}") from None
    except ValueError:
        return
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return
    names = [str(m.get("id")) for m in listed if isinstance(m, dict) and m.get("id")]
    bare = model.split("/", 1)[1] if model.startswith("openai/") else model
    if names and bare not in names and model not in names:
        raise UsageError(
            f"unknown model {bare!r} at {api_base}; it serves: {', '.join(names[:10])}"
        )


MIN_FREE = 64 * 1024
"""Free space an output folder must have for a run to start (a step takes KBs)."""


def output_folder(text: str, flag: str = "-o") -> Path:
    """The folder trajectories go to, made if missing, or a ``UsageError`` saying why it
    cannot be used: it is a file, it cannot be made or written (a read-only disk), it
    has (almost) no free space. Checked by writing, not by permission bits.
    """
    folder = Path(text).expanduser()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{flag} {text}: it is a file, not a folder; name a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = os.open(folder, os.O_WRONLY | os.O_TMPFILE | os.O_CLOEXEC, 0o600)
        os.close(probe)
    except IsADirectoryError:  # a filesystem without O_TMPFILE: make and drop a file
        _probe_by_name(folder, text, flag)
    except OSError as exc:
        if exc.errno == errno.EOPNOTSUPP:
            _probe_by_name(folder, text, flag)
        else:
            raise UsageError(f"{flag} {text}: cannot write there: {_reason(exc)}") from None
    space = os.statvfs(folder)
    free = space.f_bavail * space.f_frsize
    if free < MIN_FREE:
        raise UsageError(
            f"{flag} {text}: only {free // 1024} KB free there; free some space or "
            "choose another folder"
        )
    return folder


def _probe_by_name(folder: Path, text: str, flag: str) -> None:
    probe = folder / f".four-probe-{os.getpid()}"
    try:
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"{flag} {text}: cannot write there: {_reason(exc)}") from None


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
