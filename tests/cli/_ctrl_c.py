"""Ctrl-C at many moments of ``four run``, each try a second or two: this process imports
four and litellm once, then forks one ``four run`` a try, which runs and exits exactly as
``python -m four.cli`` does (its interpreter's own exit included), and sends it SIGINT
``offset`` seconds after its stream appears.

    python -m tests.cli._ctrl_c API_BASE FOLDER OFFSET...

prints one JSON line a try: ``{"offset", "status", "folder"}``; ``status`` is the exit
status, or minus the signal that killed it (-2: killed by SIGINT). Each try's folder
``FOLDER/N`` holds its ``work``, its ``runs`` and its ``stdout`` and ``stderr``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def _child(api_base: str, folder: Path) -> None:
    """The forked ``four run``: it never returns (SystemExit, as ``python -m four.cli``)."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        os.dup2(os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    from four.cli import main

    argv = ["run", "list the files", "--model", "test-model", "--api-base", api_base]
    argv += ["-o", str(folder / "runs"), "--cwd", str(folder / "work"), "-q"]
    sys.argv = ["four", *argv]
    raise SystemExit(main())  # as the `four` program: its words in sys.argv


def _try(api_base: str, folder: Path, offset: float) -> int:
    (folder / "work").mkdir(parents=True)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        _child(api_base, folder)
    runs = folder / "runs"
    deadline = time.monotonic() + 120
    while not any(runs.glob("*.jsonl")) and not any(runs.glob("*.json")):
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            raise SystemExit(f"the run at {folder} ended before its stream appeared")
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            raise SystemExit(f"no stream appeared at {folder}")
        time.sleep(0.001)
    time.sleep(offset)
    os.kill(pid, signal.SIGINT)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> None:
    # As a terminal's foreground job: Ctrl-C not ignored (a background job of a
    # non-interactive shell, pytest's too, starts with SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import four.cli._run  # noqa: F401  (what `four run` imports, before the forks)
    from four.invoke._lazy import litellm_module

    litellm_module()
    api_base, folder = argv[0], Path(argv[1])
    for n, offset in enumerate(float(a) for a in argv[2:]):
        status = _try(api_base, folder / str(n), offset)
        print(json.dumps({"offset": offset, "status": status, "folder": str(folder / str(n))}))
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
