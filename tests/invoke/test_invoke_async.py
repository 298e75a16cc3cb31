"""alitellm_invoke: the same requests through litellm.acompletion, for arun, over real HTTP;
closing it leaves no socket of litellm's open."""

from __future__ import annotations

import asyncio
import gc
import warnings

from four import Finished, Message, Outcome, alitellm_invoke, arun
from tests._doubles import FakeEnv
from tests._server import CHAT, LoopbackServer, chat
from tests.invoke._support import bash_parse, keep


def test_an_async_run_over_real_http_then_aclose_leaves_no_socket(server: LoopbackServer) -> None:
    server.push(chat("$ ls"), chat("DONE 42"))
    G = alitellm_invoke("openai/test-model", api_base=server.url, api_key="sk-test")
    env = FakeEnv()

    async def main() -> tuple[list[Message], Outcome]:
        try:
            return await arun(G, bash_parse, env, keep, "sys", "task")
        finally:
            await G.aclose()

    gc.collect()  # what earlier tests left for the collector is not this test's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        history, outcome = asyncio.run(main())
        gc.collect()
    assert history[-1].content == "DONE 42"
    assert outcome == Finished("42") and env.seen == ["ls"]
    assert len(server.bodies(CHAT)) == 2
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    import litellm

    if hasattr(litellm, "close_litellm_async_clients"):  # older litellm cannot close them
        ours = [w for w in caught if issubclass(w.category, ResourceWarning)]
        assert not [w for w in ours if str(server.port) in str(w.message)], ours
