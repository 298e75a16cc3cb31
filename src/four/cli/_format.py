"""Small text helpers shared by the terminal views: folding, numbers, durations."""

from __future__ import annotations

from four._types import Usage


def fold(text: str, limit: int, *, width: int = 400) -> tuple[str, int]:
    """Keep the head and tail of a long text; return it and the number of lines left out.

    ``limit`` 0 folds nothing. Lines wider than ``width`` are cut too.

    >>> fold("\\n".join(str(i) for i in range(10)), 4)
    ('0\\n1\\n… 6 more lines …\\n8\\n9', 6)
    """
    lines = [
        f"{line[:width]}… (+{len(line) - width} chars)" if limit and len(line) > width else line
        for line in text.splitlines()
    ]
    if not limit or len(lines) <= limit:
        return "\n".join(lines), 0
    head = max(1, (limit + 1) // 2)
    tail = max(1, limit - head)
    hidden = len(lines) - head - tail
    return "\n".join([*lines[:head], f"… {hidden} more lines …", *lines[-tail:]]), hidden


def seconds(value: float | None) -> str:
    """A duration for people.

    >>> seconds(0.0123), seconds(75.0), seconds(None)
    ('12 ms', '1 min 15 s', '-')
    """
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    return f"{minutes // 60} h {minutes % 60} min"


def tokens(value: int) -> str:
    """A token count, short.

    >>> tokens(950), tokens(12_345), tokens(2_500_000)
    ('950', '12.3k', '2.50M')
    """
    if value < 1000:
        return str(value)
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.2f}M"


def cost(usage: Usage) -> str:
    """The cost of some calls, saying so when some prices were unknown.

    >>> cost(Usage(1, 1, 0.0123)), cost(Usage(1, 1, None))
    ('$0.0123', 'unknown')
    """
    if usage.calls and usage.cost_unknown_calls >= usage.calls:
        return "unknown"
    text = f"${usage.known_cost:.4f}" if usage.known_cost < 10 else f"${usage.known_cost:.2f}"
    if usage.cost_unknown_calls:
        text += f" (+{usage.cost_unknown_calls} calls unpriced)"
    return text


def usage_line(usage: Usage) -> str:
    """Tokens in and out, calls and cost on one line.

    >>> usage_line(Usage(1200, 30, 0.5, calls=3))
    '1.2k in / 30 out tokens · 3 calls · $0.5000'
    """
    return (
        f"{tokens(usage.prompt_tokens)} in / {tokens(usage.completion_tokens)} out tokens"
        f" · {usage.calls} calls · {cost(usage)}"
    )


def succeeded(outcome: str | None) -> bool:
    """A finished or accepted run: the only outcomes ``four run`` exits 0 for.

    >>> succeeded("exit:task_complete"), succeeded("max_steps_reached")
    (True, False)
    """
    done = ("exit:task_complete", "Submitted")
    return outcome is not None and (outcome in done or outcome.startswith("accepted"))
