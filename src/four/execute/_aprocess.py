"""``watch`` for asyncio: one command to completion, awaited, with the same rules.

The command is started as ``watch`` starts it (``start(stdout)`` gives a ``Child``); its
output is read as it comes into a bounded buffer, its end seen on the child's exit
descriptor, both through the event loop's readers. At the timeout the child is killed
with all it started; when it exits but others hold the output open, they are killed
after ``LINGER`` seconds and a note says so. Cancelling the awaiting task kills them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable

from four.execute._interrupt import running, stopped
from four.execute._output import OutputBuffer, Ran
from four.execute._process import (
    CHUNK,
    DRAIN,
    HELD_OPEN,
    LINGER,
    Child,
    piped,
    stop_holders,
    unstarted,
)


async def awatch(start: Callable[[int], Child], output: OutputBuffer, timeout: float) -> Ran:
    """Start a command with ``start(stdout)``, read its output into ``output``, until it
    ends or ``timeout`` passes. Raises what ``start`` raises (OSError: it could not start).
    """
    begin = time.monotonic()
    if stopped():  # the run was interrupted (four.batch): the command ends as killed, unstarted
        return unstarted(output, timeout)
    loop = asyncio.get_running_loop()
    child, fd = piped(start)
    closed: asyncio.Future[None] = loop.create_future()
    exited: asyncio.Future[None] = loop.create_future()

    def read() -> None:
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return
        if data:
            output.feed(data)
        else:
            loop.remove_reader(fd)
            closed.set_result(None)

    def end() -> None:
        loop.remove_reader(child.exit_fd)
        exited.set_result(None)

    loop.add_reader(fd, read)
    loop.add_reader(child.exit_fd, end)
    # Under a supervisor (four.batch), its thread may kill this command: the exit is seen.
    command = running(child.pgid, None, child.kill)
    timed_out = False
    notes: list[str] = []
    try:
        try:
            await asyncio.wait_for(asyncio.shield(exited), timeout)
        except TimeoutError:
            timed_out = True
            child.kill()
        # The output ends when its last holder closes it: at once, once all have ended.
        done, _ = await asyncio.wait({closed}, timeout=DRAIN if timed_out else LINGER)
        if not done:
            if not timed_out:
                notes.append(HELD_OPEN)
            stop_holders(child, fd)
            await asyncio.wait({closed}, timeout=DRAIN)
        await exited  # after a kill: told once all it started have ended
    except BaseException:  # cancelled (or Ctrl-C): nothing of it may live on
        child.kill()
        with contextlib.suppress(BaseException):  # told it ended: nothing left open
            await asyncio.shield(asyncio.wait({exited}, timeout=DRAIN + 1))
        raise
    finally:
        if command is not None:
            command.release()
        loop.remove_reader(fd)
        loop.remove_reader(child.exit_fd)
        os.close(fd)
        try:
            returncode = child.wait()
        finally:
            child.close()
    output.finish()
    return Ran(
        None if timed_out else returncode,
        output,
        time.monotonic() - begin,
        timed_out,
        timeout,
        tuple(notes),
    )
