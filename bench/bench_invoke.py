"""Overhead of our G per call on loopback, side by side with a raw httpx POST and bare litellm.

    LITELLM_LOCAL_MODEL_COST_MAP=True python bench/bench_invoke.py [calls]

All clients hit the same loopback OpenAI-compatible server (tests/_server.py), the
same history (a 20-message tool-call run) and the same canned reply, interleaved
round-robin so machine load hits them alike. Reported: median and p90 per call in ms,
and our G minus bare ``litellm.completion``. A second table times only what our G does
around litellm (history to request, reply to record) without any HTTP, which is the
overhead figure that noise on a shared machine cannot blur.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

import httpx  # noqa: E402
import litellm  # noqa: E402

from four import Assistant, Message, System, ToolCall, ToolResult, User  # noqa: E402
from four.invoke import litellm_toolcall_invoke  # noqa: E402
from four.invoke._chat import read_chat  # noqa: E402
from tests._server import Answer, LoopbackServer, Request, call, chat  # noqa: E402

litellm.suppress_debug_info = True


def history(turns: int = 9) -> list[Message]:
    out: list[Message] = [System("You are a careful engineer."), User("Fix the failing test.")]
    for i in range(turns):
        out.append(
            Assistant(f"Step {i}.", (ToolCall(f"call_{i}", "bash", f'{{"command": "ls {i}"}}'),))
        )
        out.append(ToolResult(f"call_{i}", f"file_{i}.py\n" * 20))
    return out


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def summary(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.9)]


def main(calls: int = 300) -> None:
    reply = chat("Done.", [call(command="pytest -q", id="call_x")])

    def respond(_: Request) -> Answer:
        return reply

    with LoopbackServer(default=respond) as server:
        messages = history()
        G = litellm_toolcall_invoke("openai/test-model", api_base=server.url, api_key="x")
        request = G.request(messages)
        body = {k: request[k] for k in ("model", "messages", "tools")}
        body["model"] = "test-model"
        client = httpx.Client()
        url = f"{server.url}/chat/completions"

        def raw() -> object:
            return client.post(url, json=body, headers={"Authorization": "Bearer x"}).json()

        def bare() -> object:
            return litellm.completion(**request)

        def ours() -> object:
            return G(messages).unwrap()

        runners = {"httpx POST (raw)": raw, "litellm.completion (bare)": bare, "our G": ours}
        for fn in runners.values():  # warm up: imports, client caches, first-call warnings
            for _ in range(20):
                fn()
        samples: dict[str, list[float]] = {name: [] for name in runners}
        order = list(runners)
        shuffler = random.Random(4)
        for _ in range(calls):
            shuffler.shuffle(order)  # no client always runs right after another
            for name in order:
                samples[name].append(timed(runners[name]))
        client.close()

        response = litellm.completion(**request)

    print(f"## per call over loopback HTTP ({calls} calls each, interleaved; ms)")
    print("| client | median | p90 |")
    print("|---|---|---|")
    for name, values in samples.items():
        median, p90 = summary(values)
        print(f"| {name} | {median:.3f} | {p90:.3f} |")
    paired = [
        a - b for a, b in zip(samples["our G"], samples["litellm.completion (bare)"], strict=True)
    ]
    low, mid, high = statistics.quantiles(paired, n=4)
    print(
        f"\nour G - bare litellm, paired per round: median {mid:+.3f} ms"
        f" (quartiles {low:+.3f} .. {high:+.3f})"
    )

    def ours_only() -> object:
        G.request(messages)
        return read_chat(response, G.model, G.prices)

    for _ in range(200):
        ours_only()
    inner = [timed(ours_only) for _ in range(calls * 10)]
    median, p90 = summary(inner)
    print("\n## our work around litellm, no HTTP (history -> request, reply -> record; ms)")
    print("| part | median | p90 |")
    print("|---|---|---|")
    print(f"| request + read_chat, 20 messages | {median:.4f} | {p90:.4f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
