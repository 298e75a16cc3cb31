"""Wrong arguments to the public constructors raise at once, saying what to give instead.

Each case: a constructor called with one wrong argument, the exception class, and words
the message must hold (the function, the parameter, the value, the fix). None is run:
a mistake is caught where it is made, not deep inside a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from four import (
    Action,
    Assistant,
    Observation,
    User,
    audit,
    command_check,
    file_check,
    litellm_invoke,
    litellm_toolcall_invoke,
    load_trajectory,
    local_env,
    regex_parse,
    save_trajectory,
    scripted_invoke,
)
from four.batch import iter_runs
from four.checks import all_of, verify
from four.execute import docker_env, sandbox_env, shell_env, super_env
from four.invoke import (
    budget_invoke,
    context_aware_invoke,
    http_response_invoke,
    replay_invoke,
    retry_invoke,
    summarizing_invoke,
)
from four.parse import describe_edit, fenced_blocks, toolcall_parse

G = scripted_invoke(["hi"])


def _run(ctx: object) -> None:
    return None


CASES: list[tuple[str, Callable[[], object], type[Exception], tuple[str, ...]]] = [
    # the cases
    ("timeout=inf", lambda: local_env(timeout=math.inf), ValueError, ("local_env", "timeout=inf", "finite")),
    ("timeout=-1", lambda: local_env(timeout=-1), ValueError, ("timeout=-1", "above 0")),
    ("inherit='PATH'", lambda: local_env(inherit="PATH"), TypeError, ("inherit='PATH'", "letter by letter", "inherit=['PATH']")),
    ("command_check(None)", lambda: command_check(None), TypeError, ("command_check", "command must be a shell command (a str), not None")),  # type: ignore[arg-type]
    ("command_check('')", lambda: command_check(""), ValueError, ("command_check", "non-empty shell command", "accepts every submission")),
    ("command_check('  ')", lambda: command_check("  "), ValueError, ("non-empty shell command",)),
    # the same mistakes, for every constructor
    ("local_env timeout str", lambda: local_env(timeout="5"), TypeError, ("timeout='5'", "number of seconds")),  # type: ignore[call-overload]
    ("local_env max_output", lambda: local_env(max_output=2.5), TypeError, ("max_output=2.5", "whole number")),  # type: ignore[call-overload]
    ("local_env max_output -1", lambda: local_env(max_output=-1), ValueError, ("max_output=-1", "at least 0")),
    ("local_env env", lambda: local_env(env={"A": 1}), TypeError, ("env maps 'A' to 1", "str to str")),  # type: ignore[dict-item]
    ("local_env deny", lambda: local_env(deny="KEY"), TypeError, ("deny='KEY'", "deny=['KEY']")),
    ("local_env deny None", lambda: local_env(deny=["KEY", None]), TypeError, ("deny holds None", "list of strs")),  # type: ignore[list-item]
    ("local_env cwd", lambda: local_env(cwd=5), TypeError, ("cwd=5", "a path")),  # type: ignore[call-overload]
    ("local_env exit_signal", lambda: local_env(exit_signal=""), ValueError, ("exit_signal is empty",)),
    ("shell_env timeout", lambda: shell_env(timeout=0), ValueError, ("timeout=0", "above 0")),
    ("shell_env inherit", lambda: shell_env(inherit="HOME"), TypeError, ("inherit=['HOME']",)),
    ("super_env timeout", lambda: super_env(timeout=math.nan), ValueError, ("timeout=nan",)),
    ("sandbox_env timeout", lambda: sandbox_env(timeout=-5), ValueError, ("sandbox_env", "timeout=-5")),
    ("sandbox_env inherit", lambda: sandbox_env(inherit="PATH"), TypeError, ("sandbox_env", "inherit=['PATH']")),
    ("sandbox_env ro_binds", lambda: sandbox_env(ro_binds="/opt"), TypeError, ("ro_binds=['/opt']",)),
    ("docker_env image", lambda: docker_env(""), ValueError, ("docker_env", "image is empty")),
    ("docker_env image None", lambda: docker_env(None), TypeError, ("docker_env", "image=None")),  # type: ignore[arg-type]
    ("docker_env timeout", lambda: docker_env("img", timeout=math.inf), ValueError, ("docker_env", "timeout=inf")),
    ("docker_env run_args", lambda: docker_env("img", run_args="--rm"), TypeError, ("run_args=['--rm']",)),
    ("command_check timeout", lambda: command_check("pytest", timeout=-1), ValueError, ("command_check", "timeout=-1")),
    ("file_check path", lambda: file_check(""), ValueError, ("file_check", "path is empty")),
    ("file_check contains", lambda: file_check("a", contains=5), TypeError, ("contains=5",)),  # type: ignore[arg-type]
    ("all_of nothing", lambda: all_of(), ValueError, ("all_of", "at least one check")),
    ("all_of None", lambda: all_of(None), TypeError, ("all_of", "check 1=None")),  # type: ignore[arg-type]
    ("verify None", lambda: verify(None), TypeError, ("verify", "check=None")),  # type: ignore[arg-type]
    ("verify failures", lambda: verify(command_check("x"), failures=-1), ValueError, ("verify", "failures=-1")),
    ("verify compute_steps", lambda: verify(command_check("x"), compute_steps=0), ValueError, ("compute_steps=0",)),
    ("litellm_invoke model", lambda: litellm_invoke(""), ValueError, ("litellm_invoke", "model is empty")),
    ("litellm_invoke model None", lambda: litellm_invoke(None), TypeError, ("litellm_invoke", "model=None")),  # type: ignore[arg-type]
    ("litellm_invoke timeout", lambda: litellm_invoke("openai/x", timeout=math.inf), ValueError, ("timeout=inf",)),
    ("litellm_invoke prices", lambda: litellm_invoke("openai/x", prices=3.0), TypeError, ("prices=3.0", "USD per prompt token")),  # type: ignore[arg-type]
    ("litellm_invoke prices <0", lambda: litellm_invoke("openai/x", prices=(-1, 1)), ValueError, ("prices=-1",)),
    ("litellm_toolcall_invoke timeout", lambda: litellm_toolcall_invoke("openai/x", timeout=-1), ValueError, ("litellm_toolcall_invoke", "timeout=-1")),
    ("http_response_invoke api_base", lambda: http_response_invoke("m", ""), ValueError, ("http_response_invoke", "api_base is empty")),
    ("retry_invoke G None", lambda: retry_invoke(None), TypeError, ("retry_invoke", "G=None", "is not a G")),  # type: ignore[arg-type]
    ("retry_invoke max_attempts", lambda: retry_invoke(G, max_attempts=0), ValueError, ("max_attempts=0", "at least 1")),
    ("retry_invoke max_attempts str", lambda: retry_invoke(G, max_attempts="5"), TypeError, ("max_attempts='5'",)),  # type: ignore[arg-type]
    ("retry_invoke base_delay", lambda: retry_invoke(G, base_delay=-1), ValueError, ("base_delay=-1",)),
    ("budget_invoke G", lambda: budget_invoke("gpt-4o"), TypeError, ("budget_invoke", "G='gpt-4o'")),  # type: ignore[arg-type]
    ("budget_invoke cost_limit", lambda: budget_invoke(G, cost_limit=-1), ValueError, ("cost_limit=-1",)),
    ("budget_invoke token_limit", lambda: budget_invoke(G, token_limit=2.5), TypeError, ("token_limit=2.5",)),  # type: ignore[arg-type]
    ("context_aware_invoke large", lambda: context_aware_invoke(G, None), TypeError, ("context_aware_invoke", "large=None")),  # type: ignore[arg-type]
    ("context_aware_invoke limit", lambda: context_aware_invoke(G, G, 0), ValueError, ("context_limit=0",)),
    ("summarizing_invoke threshold", lambda: summarizing_invoke(G, threshold=-1), ValueError, ("summarizing_invoke", "threshold=-1")),
    ("scripted_invoke str", lambda: scripted_invoke("hello"), TypeError, ("scripted_invoke", "scripted_invoke([...])")),
    ("scripted_invoke item", lambda: scripted_invoke([5]), TypeError, ("a reply is 5",)),  # type: ignore[list-item]
    ("replay_invoke", lambda: replay_invoke(5), TypeError, ("replay_invoke", "trajectory=5")),  # type: ignore[arg-type]
    ("regex_parse tags", lambda: regex_parse("bash"), TypeError, ("regex_parse", "tags=['bash']")),
    ("regex_parse flag", lambda: regex_parse(one_action="yes"), TypeError, ("one_action='yes'", "True or False")),  # type: ignore[arg-type]
    ("toolcall_parse tool", lambda: toolcall_parse(""), ValueError, ("toolcall_parse", "tool is empty")),
    ("save_trajectory", lambda: save_trajectory(None), TypeError, ("save_trajectory", "output_dir=None")),  # type: ignore[arg-type]
    ("save_trajectory empty", lambda: save_trajectory(""), ValueError, ("output_dir is empty",)),
    ("load_trajectory", lambda: load_trajectory(5), TypeError, ("load_trajectory", "path=5")),  # type: ignore[arg-type]
    ("load_trajectory max_bytes", lambda: load_trajectory("x.json", max_bytes=0), ValueError, ("max_bytes=0",)),
    ("iter_runs make_run", lambda: iter_runs(None, []), TypeError, ("iter_runs", "make_run=None")),  # type: ignore[arg-type]
    ("iter_runs items", lambda: iter_runs(_run, "task"), TypeError, ("items='task'", "a list of tasks")),  # type: ignore[arg-type]
    ("iter_runs max_concurrency", lambda: iter_runs(_run, [], max_concurrency=0), ValueError, ("max_concurrency=0",)),
    ("iter_runs time_limit", lambda: iter_runs(_run, [], time_limit=-1), ValueError, ("time_limit=-1",)),
    ("iter_runs max_cost", lambda: iter_runs(_run, [], max_cost="5"), TypeError, ("max_cost='5'",)),  # type: ignore[arg-type]
    # arrows and records called with what they do not take: named by the checker
    ("regex_parse()(None)", lambda: regex_parse()(None), TypeError, ("RegexParse", "reply=None", "give an Assistant")),  # type: ignore[arg-type]
    ("toolcall_parse()('x')", lambda: toolcall_parse()("x"), TypeError, ("ToolcallParse", "reply='x'", "give an Assistant", "not a str")),  # type: ignore[arg-type]
    ("Action(123)", lambda: Action(123), TypeError, ("Action", "command=123", "give a str", "not an int")),  # type: ignore[arg-type]
    ("Action call_id", lambda: Action("ls", 5), TypeError, ("Action", "call_id=5", "a str or None")),  # type: ignore[arg-type]
    ("User(None)", lambda: User(None), TypeError, ("User", "content=None", "give a str")),  # type: ignore[arg-type]
    ("Assistant tool_calls", lambda: Assistant("x", tool_calls=None), TypeError, ("Assistant", "tool_calls=None", "give a tuple")),  # type: ignore[arg-type]
    ("Observation returncode", lambda: Observation("x", returncode="0"), TypeError, ("Observation", "returncode='0'", "an int or None")),  # type: ignore[arg-type]
    ("audit(None)", lambda: audit(None), TypeError, ("audit", "trajectory=None", "a str or a PathLike or a Trajectory")),  # type: ignore[arg-type]
    ("fenced_blocks(None)", lambda: fenced_blocks(None), TypeError, ("fenced_blocks", "text=None", "give a str")),  # type: ignore[arg-type]
    ("describe_edit(3)", lambda: describe_edit(3), TypeError, ("describe_edit", "edit=3", "a WholeFile or a SearchReplace")),  # type: ignore[arg-type]
]  # fmt: skip


@pytest.mark.parametrize(
    ("make", "error", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_wrong_argument_raises_at_construction(
    make: Callable[[], object], error: type[Exception], words: tuple[str, ...]
) -> None:
    with pytest.raises(error) as raised:
        make()
    message = str(raised.value)
    assert type(raised.value) is error, message
    for word in words:
        assert word in message, (word, message)


def test_right_arguments_still_pass(tmp_path: Path) -> None:
    """The checks refuse mistakes only: the documented forms are all accepted."""
    local_env(timeout=0.5, max_output=0, inherit=("PATH",), env={"A": "b"}, cwd=str(tmp_path))
    shell_env(timeout=1).close()
    docker_env("img", run_args=["--rm"], container=None)
    command_check("true", timeout=1)
    file_check("a", contains="")
    verify(command_check("x"), failures=frozenset({"a"}), compute=0)
    retry_invoke(G, max_elapsed=None)
    budget_invoke(G, cost_limit=0.0)
    litellm_invoke("openai/x", prices=(0, 1e-6), api_key="")
    save_trajectory(tmp_path)
    regex_parse(("bash", "sh"))


@pytest.mark.parametrize("make", [local_env, shell_env], ids=["local_env", "shell_env"])
def test_an_environment_called_with_a_str_says_to_wrap_it(make: Callable[[], object]) -> None:
    env = make()
    try:
        with pytest.raises(TypeError) as raised:
            env("echo hi")  # type: ignore[operator]
        assert str(raised.value).endswith("takes an Action; wrap the command: Action('echo hi')")
        with pytest.raises(TypeError, match="takes an Action"):
            env(None)  # type: ignore[operator]
    finally:
        getattr(env, "close", lambda: None)()
