"""Replies that parse by construction on the built-in model: the domain's V1 grammar goes
to the local llama.cpp server with every request (and to no other provider), and what
the real model samples under it parses.

The real-model tests need the model pulled and the ``local`` extra (see
test_local_model.py: they skip, or fail with FOUR_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from returns.result import Success

from four import Assistant, System, User
from four._grammar import Grammar, Lit
from four.cli import _build, build_parser
from four.cli._options import options
from four.domains import Domain, get_domain
from four.domains.notebook._parse import CellParse, cell_parse
from four.invoke import LocalInvoke, local_invoke
from four.invoke._budget import BudgetInvoke
from four.invoke._cycles import CycleBreakingInvoke
from four.invoke._local import LocalServer
from four.invoke._retry import RetryInvoke
from four.parse import edit_parse, regex_parse
from four.parse._edits import EditParse
from four.parse._regex import RegexParse
from four.parse._shapes import PROSE_CHARS
from four.types import Constrained, FormatError, Invoke, Sampling
from tests._server import CHAT, LoopbackServer, chat
from tests.invoke.test_local_model import model  # noqa: F401  (the fixture)

# The domains whose extra brings their checker: CI's newest-versions venv runs tests/invoke
# without them (the locked and lowest venvs have them).
NEEDS = {"python": "mypy", "notebook": "nbformat"}


def domain_of(name: str) -> Domain:
    """The domain ``name``; a skip when its extra is not installed here."""
    if name in NEEDS:
        pytest.importorskip(NEEDS[name], reason=f"the {name} extra is not installed")
    return get_domain(name)


def loopback_local(server: LoopbackServer) -> LocalServer:
    """A ``LocalServer`` record for the loopback server (its process: a finished one)."""
    process = subprocess.Popen(["true"])
    process.wait()
    settings = LocalInvoke("m", "m.gguf", 512, 1, 1, max_tokens=64)
    return LocalServer(settings, process, server.url.removesuffix("/v1"), Path("/nonexistent"))


def test_the_local_server_is_sent_the_grammar_and_a_hosted_model_is_not() -> None:
    from four.invoke import litellm_invoke

    grammar = regex_parse().grammar()
    G = LocalInvoke("m", "m.gguf", grammar=grammar.gbnf())
    with LoopbackServer() as server:
        server.push(chat("```bash\nls\n```"), chat("```bash\nls\n```"), chat("ok"))
        assert isinstance(G.chat(loopback_local(server))([User("hi")]), Success)
        resampled = G.sampled(Sampling(0.7, 3))  # as a broken cycle or a later attempt
        assert isinstance(resampled, LocalInvoke)
        assert isinstance(resampled.chat(loopback_local(server))([User("hi")]), Success)
        hosted = litellm_invoke("openai/gpt-test", api_base=server.url, api_key="none")
        assert isinstance(hosted([User("hi")]), Success)
        local, again, other = server.bodies(CHAT)
    assert local["grammar"] == grammar.gbnf() == again["grammar"]
    assert again["temperature"] == 0.7 and again["seed"] == 3
    assert "grammar" not in other and "extra_body" not in other


def _local_of(G: Invoke) -> LocalInvoke:
    """The ``LocalInvoke`` inside the wrappers ``prepare`` puts around it."""
    while isinstance(G, BudgetInvoke | RetryInvoke | CycleBreakingInvoke):
        G = G.G
    assert isinstance(G, LocalInvoke)
    return G


@pytest.mark.parametrize("domain", ["bash", "python", "cli"])
def test_four_run_local_decodes_under_its_domains_grammar(domain: str, tmp_path: Path) -> None:
    args = build_parser().parse_args(["run", "task", "--local", "--domain", domain])
    opts = options(args)
    chosen = domain_of(domain)
    made = _build.prepare(opts, opts.local or "", None, chosen, "", {}, check_program=False)
    assert isinstance(made.V1, Constrained)
    assert _local_of(made.G).grammar == made.V1.grammar().gbnf()


CASES: dict[str, tuple[RegexParse | EditParse | CellParse, str, str]] = {
    "bash": (regex_parse(), "bash", "How many lines does notes.txt have? Check it yourself."),
    "python": (edit_parse(), "python", "Write calc.py with a function add(a, b) returning a + b."),
    "notebook": (cell_parse(), "notebook", "Compute the mean of the numbers 1 to 10."),
}


@pytest.mark.parametrize("name", CASES)
def test_the_real_model_under_the_grammar_replies_what_parses(
    name: str,
    model: Path,  # noqa: F811
) -> None:
    V1, domain, task = CASES[name]
    system = domain_of(domain).system
    G = local_invoke(max_tokens=512, grammar=V1.grammar(), temperature=0.8, seed=0)
    finished = 0
    for seed in range(3):
        reply = G.sampled(Sampling(0.8, seed))([System(system), User(task)])
        assert isinstance(reply, Success), reply
        thought = reply.unwrap().content.split("```")[0].splitlines()
        assert all(len(line) <= PROSE_CHARS for line in thought), thought  # a short thought
        if reply.unwrap().finish_reason == "length":
            continue  # cut at max_tokens: a grammar bounds the shape, not the length
        finished += 1
        parsed = V1(reply.unwrap())
        assert not (
            not isinstance(parsed, Success) and isinstance(parsed.failure(), FormatError)
        ), (reply.unwrap().content, parsed)
    assert finished, "every reply was cut at max_tokens"


def test_the_real_server_holds_the_reply_to_the_grammar(model: Path) -> None:  # noqa: F811
    only = Grammar((("root", Lit("```bash\nwc -l notes.txt\n```")),))
    G = local_invoke(max_tokens=64, grammar=only)
    reply = G([System("Answer in French."), User("Say hello.")])
    assert isinstance(reply, Success)
    assert reply.unwrap().content == "```bash\nwc -l notes.txt\n```"
    assert isinstance(regex_parse()(Assistant(reply.unwrap().content)), Success)


def test_a_reply_cut_off_under_a_grammar_is_decoded_again_without_the_prompt_cache() -> None:
    """The llama.cpp build four runs, reusing a cached prompt, has decoded replies outside
    their grammar until the token limit cut them; decoded afresh, the same request kept
    to it. The cut reply never reaches the history; both calls are billed."""
    messages = [User("Sort numbers.txt into sorted.txt.")]
    G = LocalInvoke("m", "m.gguf", grammar=regex_parse().grammar().gbnf())
    with LoopbackServer() as server:
        server.push(
            chat("The numbers.\n```bash\n\n\n\n\n", finish_reason="length", usage=(100, 64)),
            chat("```bash\nsort -n numbers.txt > sorted.txt\n```", usage=(100, 12)),
            chat("cut\n```bash\n\n\n", finish_reason="length"),
            chat("cut again\n```bash\n\n\n", finish_reason="length"),
            chat("```bash\nls\n", finish_reason="length"),
        )
        local = loopback_local(server)
        reply = G.reply_from(local, messages).unwrap()
        twice = G.reply_from(local, messages).unwrap()
        plain = LocalInvoke("m", "m.gguf").reply_from(local, messages).unwrap()
        first, again, *_ = server.bodies(CHAT)
    assert reply.content.startswith("```bash\nsort -n") and not reply.truncated
    assert reply.usage is not None and reply.usage.calls == 2
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (200, 76)
    assert "cache_prompt" not in first and again["cache_prompt"] is False
    assert again["grammar"] == first["grammar"] and again["messages"] == first["messages"]
    # Cut again afresh: the reply is the cut one, which V1 then answers as a format error.
    assert twice.truncated and twice.content.startswith("cut again")
    # Without a grammar a cut reply is the model's own (it was not held to a shape).
    assert plain.truncated and plain.usage is not None and plain.usage.calls == 1
