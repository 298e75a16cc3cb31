"""The system prompts ``four run`` uses when no ``--system`` file is given.

Short on purpose: a small model (the built-in local one) follows a few plain rules and
one example of each reply far better than a long list (see bench/README.md, tasks).
"""

from __future__ import annotations

from four.execute import EXIT_SIGNAL

_RULES = """You are an agent working in a Linux shell. You do the user's task by running
commands and reading their output, one step at a time.

Rules:
- Commands run in bash; their output and exit code come back to you.
- No command may wait for input: no editors, no pagers (use cat, head, sed -n, grep).
- Write a file with a here-document: cat > name <<'EOF' ... EOF
- Look at the result of each step. Never run the same command again for the same output.
- Check your work (read the file, run the script or the tests) before you finish.
"""

TEXT = (
    _RULES
    + f"""
Each reply: one short thought, then one ```bash block with the commands to run now:

```bash
ls -la
```

When the task is done and checked, reply with only this block:

```bash
echo {EXIT_SIGNAL}
```
"""
)

TOOLCALLS = (
    _RULES
    + f"""
Call the `bash` tool with {{"command": "..."}} for every command you run. When the task
is done and checked, call it with the command: echo {EXIT_SIGNAL}
"""
)


def default_system(toolcalls: bool) -> str:
    """The built-in system prompt for text replies or tool calls.

    >>> "```bash" in default_system(False), "bash` tool" in default_system(True)
    (True, True)
    """
    return TOOLCALLS if toolcalls else TEXT
