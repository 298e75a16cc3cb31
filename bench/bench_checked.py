"""The argument checker on the loop's hot path: its cost per call, against the call.

python bench/run.py checked

Per step the loop makes records (an Action, a User observation, an Assistant reply with
its Usage, and, saving, the Usage's ``UsageRecord`` Struct), each checked in its
``__post_init__``, and calls V1 (``RegexParse.__call__``, checked). Rows:
the check alone (``check_fields`` of a record made; the wrapper over the undecorated
``__call__``), the call it guards, and their ratio. CPU time, best of 7 rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from four import Action, Assistant, Usage, User, regex_parse
from four._checked import check_fields, checked
from four.trajectory._record import usage_record

N = 20_000


def _best(fn: Callable[[], object], rounds: int = 7) -> float:
    """Best per-call CPU time of ``fn`` in microseconds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(N):
            fn()
        best = min(best, (time.process_time() - start) / N * 1e6)
    return best


def main() -> None:
    parse = regex_parse()
    reply = Assistant("Let me look.\n```bash\nls -la\n```")
    action, user = Action("ls -la"), User("a b", "observation", 0)
    usage = Usage(10, 2, 0.01)  # a reply's, and its record in the saved trajectory
    kept = usage_record(usage)
    unchecked = type(parse).__call__.__wrapped__  # type: ignore[attr-defined]

    @checked
    def same(self: object, reply: Assistant, /) -> None:  # the wrapper, over nothing
        return None

    bare = same.__wrapped__  # type: ignore[attr-defined]
    rows = [
        ("`Action(...)`", lambda: check_fields(action), lambda: Action("ls -la")),
        ("`User(...)`", lambda: check_fields(user), lambda: User("a b", "observation", 0)),
        ("`Assistant(...)`", lambda: check_fields(reply), lambda: Assistant("x")),
        ("`regex_parse()(reply)`", lambda: same(parse, reply), lambda: unchecked(parse, reply)),
        ("`Usage(...)`", lambda: check_fields(usage), lambda: Usage(10, 2, 0.01)),
        (
            "`usage_record(usage)` (a Struct)",
            lambda: check_fields(kept),
            lambda: usage_record(usage),
        ),
    ]
    wrapper = _best(lambda: bare(parse, reply))  # what the loop below counts besides the check
    print("| call | the call, us | its check, us | check / call |\n|---|---:|---:|---:|")
    total = 0.0
    for name, check, call in rows:
        spent, cost = _best(check), _best(call)
        spent -= wrapper if name.startswith("`regex") else 0.0
        total += spent
        print(f"| {name} | {cost:.2f} | {spent:.2f} | {spent / cost:.2f} |")
    print(f"\nThe checks of one step (the rows): {total:.2f} us of CPU.")


if __name__ == "__main__":
    main()
