"""``run_captured`` for asyncio: one process to completion, awaited, with the same rules.

The process starts in a new session (stdin closed, stderr merged into stdout) with
``asyncio.create_subprocess_exec``; its output is read as it comes into a bounded
buffer. At the timeout the process group is killed (and with ``mark`` every process
carrying it); when the process exits but others hold the output open, they are killed
after ``LINGER`` seconds and a note says so. Cancelling the awaiting task kills them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Mapping, Sequence

from four.execute._kill import MARK, kill_group, kill_marked
from four.execute._output import OutputBuffer, Ran
from four.execute._process import CHUNK, DRAIN, HELD_OPEN, LINGER


async def arun_captured(
    argv: Sequence[str],
    output: OutputBuffer,
    timeout: float,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    mark: str | None = None,
) -> Ran:
    """Run ``argv``, reading its output into ``output``, until it ends or ``timeout`` passes.

    Raises OSError when the process cannot start (no such program, no such cwd).
    """
    start = time.monotonic()
    if mark is not None:
        env = {**(os.environ if env is None else env), MARK: mark}
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    assert proc.stdout is not None
    reader = asyncio.ensure_future(_read(proc.stdout, output))
    timed_out = False
    notes: list[str] = []
    try:
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout)
        except TimeoutError:
            timed_out = True
            _kill(proc.pid, mark)
        # The output ends when its last holder closes it: at once, in a namespace.
        done, _ = await asyncio.wait({reader}, timeout=DRAIN if timed_out else LINGER)
        if not done:
            if not timed_out:
                notes.append(HELD_OPEN)
            _kill(proc.pid, mark)
            await asyncio.wait({reader}, timeout=DRAIN)
    except BaseException:  # cancelled (or Ctrl-C): nothing of it may live on
        _kill(proc.pid, mark)
        with contextlib.suppress(BaseException):  # reaped, its pipe closed: nothing left open
            await asyncio.shield(asyncio.wait({reader, asyncio.ensure_future(proc.wait())}))
        raise
    finally:
        reader.cancel()
    returncode = await proc.wait()
    output.finish()
    return Ran(
        None if timed_out else returncode,
        output,
        time.monotonic() - start,
        timed_out,
        timeout,
        tuple(notes),
    )


def _kill(pgid: int, mark: str | None) -> None:
    kill_group(pgid)
    if mark is not None:
        kill_marked(mark)


async def _read(stream: asyncio.StreamReader, output: OutputBuffer) -> None:
    while data := await stream.read(CHUNK):
        output.feed(data)
