"""GO / NO-GO before a run or a batch: each check a function of what it reads.

A check reads one thing (an environment variable, litellm's local price map, what a
server says of itself, a folder, a trivial command in the environment) and says GO,
WARN or NO-GO with the fix. ``four doctor`` shows them all; ``four run`` and ``four
batch`` make the cheap ones (``cheap_checks``) before their first model call and refuse
to start on a NO-GO. No model is involved except in ``probe``, which sends one tiny
request when asked (``four doctor --probe``).
"""

from __future__ import annotations

import errno
import math
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeAlias

from four._types import Action, Execute, Invoke, Observation, User
from four.observe._check import Check, Status
from four.observe._endpoint import Server, endpoint, parallel, provider_host, reach, read_server

MIN_FREE = 64 * 1024
"""Free space an output folder must have for a run to start (a step takes KBs)."""
LOW_FREE = 100 * 2**20
"""Below this much free space a batch may fill the disk: a warning."""
CHARS_PER_TOKEN = 4
"""The token estimate of a text: its UTF-8 bytes over this (a tokenizer is not loaded)."""


# --- the provider, the model, the endpoint ---------------------------------------------


def provider_key(model: str, api_base: str | None) -> Check:
    """The key the model's provider needs is set in this process's environment (with
    ``api_base``: none is needed; ``FOUR_API_KEY`` is what goes to that server)."""
    if api_base:
        sent = "FOUR_API_KEY" if os.environ.get("FOUR_API_KEY") else "no key"
        return Check("key", "GO", f"{api_base} gets {sent}; no provider key is sent there")
    from four.invoke._lazy import litellm_module

    lite = litellm_module()
    try:
        provider = str(lite.get_llm_provider(model)[1])
    except Exception:
        return Check(
            "key",
            "NO-GO",
            f"unknown model {model!r}: litellm cannot tell its provider; name it as "
            "provider/model (e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5), "
            "or give --api-base for an OpenAI-compatible server",
        )
    found = lite.validate_environment(model)
    missing = [str(k) for k in found.get("missing_keys", [])] if isinstance(found, dict) else []
    if missing:
        return Check(
            "key",
            "NO-GO",
            f"missing API key for {model} ({provider}): set {' and '.join(missing)}",
            f"export {missing[0]}=...",
        )
    return Check("key", "GO", f"{provider}'s key is set")


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What litellm's local price map knows of a model (None: not known)."""

    context_window: int | None = None
    input_price: float | None = None  # USD per token
    output_price: float | None = None
    problem: str = ""


def model_facts(model: str) -> ModelFacts:
    """The model's context window and prices from litellm's local map (never fetched)."""
    from four.invoke._lazy import litellm_module

    lite = litellm_module()
    try:
        info = lite.get_model_info(model)
    except Exception as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ModelFacts(problem=text[:160])

    def number(key: str) -> float | None:
        value = info.get(key)
        return float(value) if isinstance(value, int | float) else None

    window = number("max_input_tokens") or number("max_tokens")
    return ModelFacts(
        int(window) if window else None,
        number("input_cost_per_token"),
        number("output_cost_per_token"),
    )


def known_model(
    model: str, facts: ModelFacts, server: Server | None, prices: tuple[float, float] | None
) -> Check:
    """The model's context window and prices are known (litellm's map, the server, or
    ``--prices``), or why not."""
    window = facts.context_window or (server.context_window if server else None)
    where = "litellm's map" if facts.context_window else "the server"
    priced = prices is not None or facts.input_price is not None
    if window is None and not priced:
        why = facts.problem or "not in litellm's local price map"
        return Check(
            "model",
            "WARN",
            f"{model}: {why}; its context window and price are unknown (cost counts as unknown)",
            "give --prices IN,OUT (USD per million tokens; 0,0 for a local model)",
        )
    parts = [f"context {window:,} tokens ({where})" if window else "context window unknown"]
    if prices is not None:
        parts.append(f"${prices[0] * 1e6:g}/${prices[1] * 1e6:g} per M tokens (--prices)")
    elif facts.input_price is not None and facts.output_price is not None:
        parts.append(
            f"${facts.input_price * 1e6:g}/${facts.output_price * 1e6:g} per M tokens in/out"
        )
    if not priced:
        return Check(
            "model",
            "WARN",
            f"{model}: {'; '.join(parts)}; no price, so cost counts as unknown",
            "give --prices IN,OUT (0,0 for a local model)",
        )
    return Check("model", "GO", f"{model}: {'; '.join(parts)}")


# --- where the run goes and where its commands run --------------------------------------


def output_folder(text: str, *, make: bool = False, flag: str = "-o") -> Check:
    """The folder trajectories go to is a folder, writable (tried, not read from
    permission bits), with free space. With ``make``, it is made if missing; without,
    its nearest existing parent is tried."""
    folder = Path(text).expanduser()
    if folder.exists() and not folder.is_dir():
        return Check("output", "NO-GO", f"{flag} {text}: it is a file, not a folder; name a folder")
    broken = _unresolvable(folder)
    if broken:
        return Check("output", "NO-GO", f"{flag} {text}: {broken}", "name a real folder")
    probe = folder
    if make:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return _unwritable(f"{flag} {text}", exc)
    else:
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
    problem = _write_probe(probe)
    if problem is not None:
        return _unwritable(f"{flag} {text}", problem)
    space = os.statvfs(probe)
    free = space.f_bavail * space.f_frsize
    if free < MIN_FREE:
        return Check(
            "output",
            "NO-GO",
            f"{flag} {text}: only {free // 1024} KB free there; free some space or choose "
            "another folder",
        )
    shown = f"{free / 2**30:.1f} GiB" if free >= 2**30 else f"{free / 2**20:.0f} MiB"
    if free < LOW_FREE:
        return Check(
            "output", "WARN", f"{text}: writable, {shown} free", "free some space before a batch"
        )
    made = "" if probe == folder else f" (to be made, in {probe})"
    return Check("output", "GO", f"{text}: writable, {shown} free{made}")


def _unresolvable(folder: Path) -> str | None:
    """Why ``folder`` (or a parent) names no place a folder can be: a symbolic link loop,
    a broken link (a folder cannot be made through it), a path through a file; else None."""
    try:
        os.stat(folder)
        return None
    except FileNotFoundError:
        pass
    except OSError as exc:  # ELOOP, ENOTDIR, ENAMETOOLONG...
        loop = " (a symbolic link loop)" if exc.errno == errno.ELOOP else ""
        return f"{(exc.strerror or str(exc)).lower()}{loop}"
    here = folder
    while here != here.parent:  # the first link on the way that leads nowhere
        if here.is_symlink() and not here.exists():
            return f"{here} is a broken symbolic link (to {os.readlink(here)})"
        here = here.parent
    return None


def signing_key(path: str) -> Check:
    """The ``--sign`` key: a readable, unencrypted Ed25519 private key (``four keygen``)."""
    from four.trajectory._sign import SigningError, SigningKey

    try:
        key = SigningKey.load(path)
    except SigningError as exc:
        return Check("signing", "NO-GO", f"--sign: {exc}", "make one with four keygen")
    return Check("signing", "GO", f"{path}: an Ed25519 key, public {key.public[:16]}…")


def _unwritable(text: str, exc: OSError) -> Check:
    reason = (exc.strerror or str(exc)).lower()
    return Check(
        "output", "NO-GO", f"{text}: cannot write there: {reason}", "choose another folder"
    )


def _write_probe(folder: Path) -> OSError | None:
    """Write (and drop) a nameless file in ``folder``, else a named one; the error, if any."""
    try:
        os.close(os.open(folder, os.O_WRONLY | os.O_TMPFILE | os.O_CLOEXEC, 0o600))
        return None
    except OSError as exc:
        if not isinstance(exc, IsADirectoryError) and exc.errno != 95:  # EOPNOTSUPP
            return exc
    probe = folder / f".four-probe-{os.getpid()}"
    try:
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as exc:
        return exc
    return None


MakeEnv: TypeAlias = Callable[[], Execute]
TRIVIAL = "echo four-doctor-$((6 * 7))"


def environment(
    kind: str,
    make: MakeEnv,
    image: str | None = None,
    then: Callable[[Execute], Check] | None = None,
) -> list[Check]:
    """The environment runs a trivial command: bash for local and persistent; bubblewrap
    and user namespaces first for sandbox; the daemon and the image first for docker.
    ``then`` is a further check asked of the same environment, once it works."""
    missing = _sandbox_missing() if kind == "sandbox" else None
    if kind == "docker":
        missing = _docker_missing(image or "")
    if missing is not None:
        return [missing]
    try:
        env = make()
    except (TypeError, ValueError, OSError) as exc:
        return [Check("environment", "NO-GO", f"cannot make the {kind} environment: {exc}")]
    try:
        started = time.monotonic()
        seen = env(Action(TRIVIAL))
        took = time.monotonic() - started
        answer = seen.value_or(None)
        if (
            isinstance(answer, Observation)
            and answer.returncode == 0
            and ("four-doctor-42" in answer.content)
        ):
            ran = Check("environment", "GO", f"{kind}: a command ran in {took * 1000:.0f} ms")
            return [ran] if then is None else [ran, then(env)]
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()
    shown = answer.content if isinstance(answer, Observation) else str(seen.failure())
    lines = [line for line in shown.splitlines() if line.strip()]
    said = " ".join(lines)[:200]
    failed = Check("environment", "NO-GO", f"{kind}: a trivial command failed: {said}",
                   _ENV_FIX.get(kind, ""))  # fmt: skip
    return [failed]


_ENV_FIX = {
    "local": "install bash",
    "persistent": "install bash",
    "sandbox": "install bubblewrap and allow user namespaces, or use --env docker",
    "docker": "start the Docker daemon and check the image",
}


def _sandbox_missing() -> Check | None:
    if shutil.which("bwrap") is None:
        return Check(
            "environment",
            "NO-GO",
            "sandbox: bubblewrap (bwrap) is not installed",
            "apt-get install bubblewrap (or use --env docker)",
        )
    for knob, off in (("/proc/sys/kernel/unprivileged_userns_clone", "0"),
                      ("/proc/sys/user/max_user_namespaces", "0")):  # fmt: skip
        try:
            value = Path(knob).read_text().strip()
        except OSError:
            continue
        if value == off and os.geteuid() != 0:
            return Check(
                "environment",
                "NO-GO",
                f"sandbox: user namespaces are off ({knob} = {value})",
                f"sysctl -w {knob.removeprefix('/proc/sys/').replace('/', '.')}=1",
            )
    return None


def _docker_missing(image: str) -> Check | None:
    docker = shutil.which("docker")
    if docker is None:
        return Check("environment", "NO-GO", "docker: no docker command", "install Docker")
    ran = _quiet([docker, "version", "--format", "{{.Server.Version}}"])
    if ran is None or ran.returncode != 0:
        said = (ran.stderr.strip().splitlines() or ["no answer"])[-1] if ran else "no answer"
        return Check(
            "environment",
            "NO-GO",
            f"docker: the daemon does not answer: {said[:160]}",
            "start it (systemctl start docker, or dockerd)",
        )
    if not image:
        return Check("environment", "NO-GO", "docker: no image", "--image NAME or FOUR_IMAGE")
    found = _quiet([docker, "image", "inspect", "--format", "{{.Id}}", image])
    if found is None or found.returncode != 0:
        return Check(
            "environment",
            "NO-GO",
            f"docker: the image {image} is not on this machine",
            f"docker pull {image} (or docker build -t {image} .)",
        )
    return None


def _quiet(argv: Sequence[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def check_program(command: str, env: Execute, held_out: Sequence[str] = ()) -> Check:
    """The program the ``--check`` command starts exists where the check runs: asked of
    the run's own environment (``command -v``). A program inside a ``held_out`` folder
    (``--check-files``: there only while the check runs) is not looked for."""
    program = program_of(command)
    if program is None:
        return Check("check", "GO", "the check is a shell construct")
    top = program.removeprefix("./").split("/", 1)[0]
    if "/" in program and top in {h.strip("/") for h in held_out}:
        return Check("check", "GO", f"{program} comes with the held-out files (--check-files)")
    seen = env(Action(f"command -v {shlex.quote(program)}")).value_or(None)
    if isinstance(seen, Observation) and seen.returncode == 0:
        return Check("check", "GO", f"{program} is there")
    return Check(
        "check",
        "NO-GO",
        f"the --check command's program {program!r} is not found where it runs",
        f"install {program}, or give its path",
    )


def program_of(command: str) -> str | None:
    """The first program a shell command runs (variable assignments skipped), or None
    for a construct that is no program.

    >>> program_of("FOO=1 python -m pytest -q"), program_of("( cd x && make )")
    ('python', None)
    """
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    for word in words:
        if "=" in word.split("/", 1)[0] and not word.startswith("="):
            continue
        return None if word in ("(", "{", "!", "if", "for", "while", "case") else word
    return None


# --- sizes and budgets ---------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """Tokens of ``text``, estimated from its length (no tokenizer is loaded).

    >>> estimate_tokens("x" * 400)
    100
    """
    return math.ceil(len(text.encode("utf-8")) / CHARS_PER_TOKEN)


def context_fit(system: str, task: str, window: int | None) -> Check:
    """The system prompt and the task leave room in the context window."""
    used = estimate_tokens(system) + estimate_tokens(task)
    if window is None:
        return Check(
            "context",
            "WARN",
            f"≈{used:,} tokens of system prompt and task; the context window is unknown",
            "make sure the model takes them and the steps after",
        )
    share = used / window
    detail = f"≈{used:,} of {window:,} tokens ({share:.0%}) for system prompt and task"
    if share >= 1:
        return Check("context", "NO-GO", detail, "shorten the task or --system, or a larger model")
    if share > 0.5:
        return Check("context", "WARN", detail, "little room is left for the steps")
    return Check("context", "GO", detail)


def probe(G: Invoke) -> tuple[Check, float | None]:
    """One tiny request through the run's own model path: it answers, and how fast."""
    started = time.monotonic()
    try:
        result = G([User("Reply with the word OK.", "task")])
    except Exception as exc:  # a component's own crash is a finding here, not ours
        return Check("probe", "NO-GO", f"the model call raised {type(exc).__name__}: {exc}"), None
    took = time.monotonic() - started
    reply = result.value_or(None)
    if reply is None:
        error = result.failure()
        return Check("probe", "NO-GO", f"one tiny request failed: {error}", _probe_fix(error)), None
    tokens = reply.usage.total_tokens if reply.usage else 0
    return Check("probe", "GO", f"answered in {took:.2f} s ({tokens} tokens)"), took


def _probe_fix(error: object) -> str:
    kind = str(getattr(error, "kind", ""))
    return {
        "authentication": "check the key",
        "not_found": "check the model name",
        "rate_limit": "wait, or lower --workers",
        "connection": "check the endpoint",
    }.get(kind, "")


@dataclass(frozen=True, slots=True)
class Budget:
    """What a wall-clock budget is checked against."""

    max_steps: int
    timeout: float | None = None  # per run
    tasks: int = 1
    workers: int = 1
    slots: int | None = None
    batch_timeout: float | None = None
    command_seconds: float = 0.0  # a command's expected time per step (not measured: 0)


def wall_budget(budget: Budget, latency: float | None) -> Check:
    """The wall-clock budgets against steps x the measured latency (from ``probe``): a
    run that takes every step would take ``max_steps x latency``; a batch, that for each
    round of runs the endpoint serves at once."""
    if budget.timeout is None and budget.batch_timeout is None:
        return Check("budget", "GO", "no wall-clock limit (--timeout) to size")
    if latency is None:
        return Check(
            "budget",
            "WARN",
            "the model's latency is not measured, so --timeout cannot be sized",
            "add --probe",
        )
    per_step = latency + budget.command_seconds
    run_time = budget.max_steps * per_step
    lines = [f"{budget.max_steps} steps x {per_step:.2f} s ≈ {span(run_time)} a run"]
    status: Status = "GO"
    fix = ""
    if budget.timeout is not None and run_time > budget.timeout:
        steps = int(budget.timeout / per_step)
        lines.append(f"--timeout {span(budget.timeout)} allows ≈{steps} steps")
        status, fix = "WARN", f"--timeout {math.ceil(run_time)} or --max-steps {max(steps, 1)}"
    if budget.batch_timeout is not None:
        at_once = min(budget.workers, budget.slots or budget.workers)
        rounds = math.ceil(budget.tasks / max(at_once, 1))
        batch_time = rounds * (min(run_time, budget.timeout or run_time))
        lines.append(f"{budget.tasks} tasks, {at_once} at once ≈ {span(batch_time)}")
        if batch_time > budget.batch_timeout:
            status = "WARN"
            fix = fix or f"--batch-timeout {math.ceil(batch_time)}, or fewer tasks per batch"
    return Check("budget", status, "; ".join(lines), fix)


def span(seconds: float) -> str:
    """A duration as people say it (the doctor's budget check, a launch's cost).

    >>> span(90), span(600), span(9000)
    ('90 s', '10 min', '2.5 h')
    """
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- the model run on this machine (four run --local) ------------------------------------


def local_model(name: str, folder: Path | None = None) -> Check:
    """The model ``four run --local`` would run: pulled (or a GGUF file) and the local
    extra installed; nothing is started."""
    import importlib.util

    from four.models import find_model

    found = find_model(name, folder)
    if not isinstance(path := found.value_or(None), Path):
        return Check("model", "NO-GO", str(found.failure()), f"four model pull {name}")
    if importlib.util.find_spec("xllamacpp") is None:
        return Check(
            "model", "NO-GO", f"{name}: the local extra is not installed",
            "pip install 'four-loop[local]'",
        )  # fmt: skip
    size = path.stat().st_size
    return Check("model", "GO", f"{name}: {path} ({size / 2**30:.2f} GiB), served by llama.cpp")


def memory_for(name: str, folder: Path | None = None) -> Check:
    """Room in memory for the local model: its file and about 1 GiB of context and server,
    against what ``/proc/meminfo`` says is available."""
    from four.models import find_model

    path = find_model(name, folder).value_or(None)
    if not isinstance(path, Path):
        return Check("memory", "WARN", "not checked: the model is not there", "pull it first")
    need = path.stat().st_size + 2**30
    try:
        info = Path("/proc/meminfo").read_text()
        free = next(int(line.split()[1]) * 1024 for line in info.splitlines()
                    if line.startswith("MemAvailable:"))  # fmt: skip
    except (OSError, StopIteration, ValueError, IndexError):
        return Check("memory", "WARN", "available memory unknown (no /proc/meminfo)")
    detail = f"{free / 2**30:.1f} GiB available, the model needs about {need / 2**30:.1f} GiB"
    if free < need:
        return Check("memory", "WARN", detail, "close other programs, or a smaller model")
    return Check("memory", "GO", detail)


# --- all of them ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run or a batch is about to do, as far as readiness is concerned."""

    model: str
    api_base: str | None
    api_key: str | None
    env: str
    make_env: MakeEnv
    output_dir: str
    system: str
    task: str
    check: str | None = None  # a shell command (None for a domain whose check is not)
    held_out: tuple[str, ...] = ()  # where --check-files go in the workspace
    image: str | None = None
    prices: tuple[float, float] | None = None
    workers: int | None = None  # a batch's
    budget: Budget = field(default_factory=lambda: Budget(100))
    local_window: int | None = None  # with --local: its context size; no key, no endpoint
    workspace: str | None = None  # where the commands start (--cwd)
    sign: str | None = None  # the private key that signs each run's seal (--sign)


def cheap_checks(plan: Plan, server: Server | None = None) -> list[Check]:
    """The checks ``four run`` and ``four batch`` make before their first model call:
    the key, the model, the server's answer (with ``--api-base``), the output folder,
    the prompt's fit. None starts a process or sends a model request."""
    signing = [signing_key(plan.sign)] if plan.sign else []
    if plan.local_window is not None:
        return [
            local_model(plan.model),
            memory_for(plan.model),
            output_folder(plan.output_dir, make=False),
            *signing,
            context_fit(plan.system, plan.task, plan.local_window),
        ]
    checks = [provider_key(plan.model, plan.api_base)]
    if plan.api_base:
        server = server or read_server(plan.api_base, plan.api_key)
        checks.append(endpoint(plan.model, server))
    facts = model_facts(plan.model)
    checks.append(known_model(plan.model, facts, server, plan.prices))
    checks.append(output_folder(plan.output_dir, make=False))
    checks += signing
    window = facts.context_window or (server.context_window if server else None)
    checks.append(context_fit(plan.system, plan.task, window))
    return checks


def _prompt_row(plan: Plan) -> Check:
    """The prompt's commands against the tools' real interfaces (``four lint``)."""
    from four.observe._interface import toolbox
    from four.observe._lint import prompt_check

    try:
        tools = toolbox(plan.env, plan.workspace, image=plan.image)
    except ValueError as exc:
        return Check("prompt", "WARN", f"not checked: {exc}")
    with tools:
        return prompt_check(plan.system, plan.task, tools)


def examine(plan: Plan, *, send_probe: bool = False, G: Invoke | None = None) -> list[Check]:
    """Every check of ``four doctor``, in order: ``cheap_checks``, then the endpoint
    (hosted: a TCP connection), the environment (a trivial command in it), the check's
    program, a batch's parallelism, the probe (with ``send_probe`` and ``G``) and the
    wall-clock budget."""
    server = read_server(plan.api_base, plan.api_key) if plan.api_base else None
    checks = cheap_checks(plan, server)
    if server is None and plan.local_window is None:
        host = provider_host(plan.model)
        checks.insert(1, reach(host) if host else Check(
            "endpoint", "WARN", f"no known API host for {plan.model}", "check it with --probe"
        ))  # fmt: skip
    command, held = plan.check, plan.held_out
    then = None if command is None else (lambda env: check_program(command, env, held))
    ran = environment(plan.env, plan.make_env, plan.image, then)
    checks.extend(ran)
    if command is not None and len(ran) == 1:  # the environment did not run
        checks.append(Check("check", "WARN", "not checked: the environment does not run",
                            "fix the environment first"))  # fmt: skip
    if len(ran) > 1 or (command is None and ran[0].status == "GO"):  # the environment runs
        checks.append(_prompt_row(plan))
    if plan.workers is not None:
        checks.append(parallel(plan.workers, server))
    latency = None
    budget = plan.budget
    if server is not None and server.slots is not None:
        budget = replace(budget, slots=server.slots)
    if send_probe and G is not None:
        found, latency = probe(G)
        checks.append(found)
    checks.append(wall_budget(budget, latency))
    return checks
