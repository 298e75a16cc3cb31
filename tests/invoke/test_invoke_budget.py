"""budget_invoke: cost and token budgets end the run with their own outcome."""

from __future__ import annotations

from four import (
    Assistant,
    CostLimitReached,
    Finished,
    ModelErrorKind,
    Usage,
    User,
    run,
    scripted_invoke,
)
from four._describe import describe
from four.invoke import budget_invoke, litellm_invoke, retry_invoke, spent
from tests._doubles import FakeEnv
from tests._server import LoopbackServer, chat, error
from tests.invoke._support import bash_parse, keep


def priced(text: str, cost: float | None, tokens: int = 10) -> Assistant:
    return Assistant(text, usage=Usage(tokens, tokens, cost))


def test_cost_limit_ends_the_run_with_its_own_outcome() -> None:
    G = budget_invoke(
        scripted_invoke([priced("$ a", 0.4), priced("$ b", 0.4), priced("$ c", 0.4), "$ d"]),
        cost_limit=1.0,
    )
    env = FakeEnv()
    _, outcome = run(G, bash_parse, env, keep)
    assert outcome == CostLimitReached("cost 1.2000 >= limit 1.0000")
    assert outcome.text.startswith("cost_limit_reached: ")
    assert env.seen == ["a", "b", "c"]


def test_billed_replies_that_failed_to_parse_still_count() -> None:
    """Unparseable replies are billed: they use up the budget as any other."""
    G = budget_invoke(
        scripted_invoke([priced("no command", 0.6), priced("still none", 0.6), "$ x"]),
        cost_limit=1.0,
    )
    _, outcome = run(G, bash_parse, FakeEnv(), keep, max_format_errors=0)
    assert isinstance(outcome, CostLimitReached)


def test_token_limit() -> None:
    G = budget_invoke(scripted_invoke([priced("$ a", None, 30), "$ b"]), token_limit=50)
    _, outcome = run(G, bash_parse, FakeEnv(), keep)
    assert outcome == CostLimitReached("tokens 60 >= limit 50")


def test_unknown_costs_are_reported_not_counted() -> None:
    """Calls of unknown cost do not count toward the cost limit, and the message says so."""
    used = spent([priced("a", None), priced("b", 0.7), priced("c", 0.5)])
    assert (used.known_cost, used.cost_unknown_calls) == (1.2, 1)
    G = budget_invoke(scripted_invoke(["x"]), cost_limit=1.0)
    failure = G([priced("a", None), priced("b", 0.7), priced("c", 0.5)]).failure()
    assert failure.kind is ModelErrorKind.BUDGET
    assert failure.message == "cost 1.2000 >= limit 1.0000 (1 calls of unknown cost not counted)"
    unknown_only = G([priced("a", None)] * 50)
    assert unknown_only.unwrap().content == "x"


def test_under_budget_calls_through_and_each_run_has_its_own_budget() -> None:
    inner = scripted_invoke(["$ submit 1", "$ submit 2"])
    G = budget_invoke(inner, cost_limit=0.5)
    assert run(G, bash_parse, FakeEnv(), keep)[1] == Finished("1")
    assert run(G, bash_parse, FakeEnv(), keep)[1] == Finished("2")


def test_budget_over_http_stops_before_the_next_request(server: LoopbackServer) -> None:
    """Through real HTTP and retry_invoke: priced replies reach the limit; no more requests."""
    server.push(chat("$ a", usage=(1000, 0)), chat("$ b", usage=(1000, 0)), error(500), chat("$ c"))
    G = budget_invoke(
        retry_invoke(
            litellm_invoke("openai/m", api_base=server.url, api_key="x", prices=(1e-3, 1e-3)),
            sleep=lambda _: None,
        ),
        cost_limit=2.0,
    )
    env = FakeEnv()
    _, outcome = run(G, bash_parse, env, keep)
    assert outcome == CostLimitReached("cost 2.0000 >= limit 2.0000")
    assert env.seen == ["a", "b"] and server.pending == 2


def test_budget_is_checked_before_the_call() -> None:
    inner = scripted_invoke(["x"])
    budget = budget_invoke(inner, cost_limit=0.0)
    assert budget([User("q")]).failure().kind is ModelErrorKind.BUDGET
    assert inner.position == 0


def test_described() -> None:
    description = describe(budget_invoke(scripted_invoke([]), cost_limit=2.5))
    assert isinstance(description, dict) and description["cost_limit"] == 2.5
