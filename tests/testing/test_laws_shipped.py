"""The laws of four.testing hold for every component four ships: parsers, invokes over
the loopback model server, the trajectory emit, the verified judge, and the loop."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

from four import (
    alitellm_invoke,
    budget_invoke,
    command_check,
    http_response_invoke,
    litellm_invoke,
    litellm_toolcall_invoke,
    local_env,
    regex_parse,
    retry_invoke,
    save_trajectory,
    scripted_invoke,
    shell_env,
    toolcall_parse,
    verify,
)
from four.checks import Claim
from four.quaternary import CheckResult, no, yes
from four.testing import (
    acheck_invoke,
    acheck_loop,
    check_emit,
    check_invoke,
    check_loop,
    check_parse,
    check_verify,
)
from tests._server import LoopbackServer, Request, chat, responses

BASH = "```bash\necho step\n```"


@pytest.mark.parametrize(
    ("parser", "plain_text_submits"),
    [
        (regex_parse(), False),
        (regex_parse(one_action=True), False),
        (regex_parse(finish_on_plain_text=True), True),
        (toolcall_parse(), False),
        (toolcall_parse(finish_on_plain_text=True), True),
    ],
    ids=["regex", "regex one action", "regex plain text", "toolcall", "toolcall plain text"],
)
def test_the_parsers_obey_the_parse_law(parser: object, plain_text_submits: bool) -> None:
    check_parse(parser, plain_text_submits=plain_text_submits)  # type: ignore[arg-type]


def _answer(request: Request) -> object:
    return responses("ok") if request.path.endswith("/responses") else chat(BASH)


@pytest.fixture
def model_server() -> Iterator[LoopbackServer]:
    with LoopbackServer(default=_answer) as running:  # type: ignore[arg-type]
        yield running


def test_the_invokes_obey_the_invoke_law_over_real_http(model_server: LoopbackServer) -> None:
    base = model_server.url
    for G in (
        litellm_invoke("openai/test", api_base=base, api_key="k"),
        litellm_toolcall_invoke("openai/test", api_base=base, api_key="k"),
        http_response_invoke("test", api_base=base, api_key="k"),
        retry_invoke(litellm_invoke("openai/test", api_base=base, api_key="k")),
        budget_invoke(litellm_invoke("openai/test", api_base=base, api_key="k"), cost_limit=1.0),
        scripted_invoke([BASH] * 1000),
    ):
        check_invoke(G, max_examples=15)


def test_the_async_invoke_obeys_the_invoke_law_over_real_http(model_server: LoopbackServer) -> None:
    acheck_invoke(alitellm_invoke("openai/test", api_base=model_server.url, api_key="k"),
                  max_examples=15)  # fmt: skip


def test_the_trajectory_emit_obeys_the_emit_law() -> None:
    with tempfile.TemporaryDirectory() as folder:
        check_emit(lambda: save_trajectory(folder), max_examples=40)


def test_the_verified_judge_obeys_the_verify_law() -> None:
    outcomes = iter([no("first"), no("second"), yes()] * 1000)
    check_verify(verify(lambda claim: next(outcomes), failures=2))
    with tempfile.TemporaryDirectory() as folder:
        marker = f"{folder}/done"
        check_verify(
            verify(command_check(f"test -f {marker}")),
            make_env=lambda: local_env(cwd=folder),
            max_examples=10,
        )


def test_the_verify_law_covers_the_last_judgement() -> None:
    at_end = []  # the last judgement's claims have no output; the scene's submissions do

    def check(claim: Claim) -> CheckResult:
        if not claim.output:
            at_end.append(claim)
            return yes()
        return no("submitted too early")

    check_verify(verify(check, failures=2), max_examples=20, seed=1)
    assert at_end  # runs that spent their steps were judged at the end, and audited
    check_verify(verify(check, failures=2, last_judgement=False), max_examples=5, seed=1)


@pytest.mark.parametrize("env", [local_env, shell_env], ids=["local", "shell"])
def test_the_loop_obeys_its_law_with_real_bash(env: object) -> None:
    with tempfile.TemporaryDirectory() as folder:
        check_loop(lambda: scripted_invoke([BASH] * 20), regex_parse(), env,  # type: ignore[arg-type]
                   lambda: save_trajectory(folder), max_examples=8)  # fmt: skip
        acheck_loop(lambda: scripted_invoke([BASH] * 20), regex_parse(), env,  # type: ignore[arg-type]
                    lambda: save_trajectory(folder), max_examples=8)  # fmt: skip
