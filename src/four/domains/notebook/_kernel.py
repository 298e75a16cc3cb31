"""V2 of the notebook domain: each cell checked with ``ast``, then run in one persistent
Jupyter kernel (``jupyter_client`` + ``ipykernel``, driven through ``nbclient``).

Containment: the kernel is a tool of the run's environment (``four.execute``'s
``ToolHost``): here in a PID namespace of its own, in the sandbox, or in the run's
container, as a command of that environment would run, with an environment made for it
(no secret of the driver's). Each kernel has a private folder in the host's shared
folder for its connection file and IPC sockets (concurrent kernels never share a socket
or race for a port). Its own stdout and stderr (what a cell writes to fd 1 and 2 past
ipykernel's capture) go to a pipe of ours, never to the user's terminal. At the end the
kernel's launcher is killed, and with it the namespace (or sandbox) and every process a
cell started; in a container, every process still carrying the kernel's mark.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import logging
import math
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from returns.result import Failure, Result, Success

from four.domains.notebook._nb import code_cell, error_output, markdown_cell, notebook
from four.domains.notebook._outputs import describe_outputs, error_of, figures, streams
from four.execute import DEFAULT_INHERIT, EXIT_SIGNAL, SECRET_PATTERNS, command_env
from four.execute._contain import Contained
from four.execute._interrupt import running, stopped
from four.execute._kill import kill_group, kill_marked
from four.execute._output import ClosedOnExit
from four.execute._tools import Tail, ToolHost, tool_host
from four.types import Action, ExecutionError, Observation, Submitted

if TYPE_CHECKING:
    from jupyter_client.manager import AsyncKernelManager, KernelManager
    from nbclient import NotebookClient
    from nbformat import NotebookNode

MARKDOWN = "%%markdown\n"
"""How ``cell_parse`` hands a markdown cell to the environment (IPython's own cell magic
for markdown): it joins the notebook and is not sent to the kernel."""

Status = Literal["ok", "error", "syntax_error", "timed_out", "lost"]
"""What became of a code cell: ran, raised, never ran (bad syntax), interrupted at its
timeout (the kernel kept its state), or lost with the kernel (it was restarted or
stopped; its state is gone)."""


_WARM_UP = """\
def _four_warm_up():
    import importlib.util, sys
    if importlib.util.find_spec("matplotlib") is not None:
        import matplotlib.font_manager  # reads its font cache, or builds it: seconds, once
    if "" not in sys.path:  # started with a safe path: the cells import from the workspace
        sys.path.insert(0, "")
_four_warm_up()
del _four_warm_up
"""
"""Run in a new kernel before its first cell: matplotlib's font cache, when missing, is
built now, not inside a cell's timeout (where the build takes seconds). Each matplotlib
version keeps a cache of its own (``fontlist-v390.json``): another version's does not
count, so the import decides (with the cache there, it costs milliseconds). Then the
working folder goes on the path, as in any Jupyter kernel (it started without it)."""


@dataclass(eq=False, slots=True, weakref_slot=True)
class KernelEnv(ClosedOnExit):
    """V2: Python cells in one Jupyter kernel kept for the run; see ``kernel_env``.

    ``cells`` holds every cell given so far (markdown and code, failed ones too) with
    its outputs; each code cell's ``metadata.four.status`` says what became of it, and
    ``metadata.four.figures`` the run-wide numbers of the figures it made. Thread-safe:
    cells run one at a time.
    """

    timeout: float = 60.0
    max_output: int = 10_000
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    kernel_name: str = "python3"
    startup_timeout: float = 60.0
    exit_signal: str = EXIT_SIGNAL
    inherit: tuple[str, ...] = DEFAULT_INHERIT
    deny: tuple[str, ...] = SECRET_PATTERNS
    interrupt_grace: float = 5.0
    host: ToolHost | None = field(default=None, repr=False)
    """Where the kernel runs (None: here, in a PID namespace of its own, made at start)."""
    restarts: int = field(default=0, repr=False, init=False)
    _cells: list[NotebookNode] = field(default_factory=list, repr=False, init=False)
    _figures: int = field(default=0, repr=False, init=False)
    _kernel: _Kernel | None = field(default=None, repr=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, init=False)
    _finalizer: weakref.finalize[[list[_Kernel | None]], KernelEnv] | None = field(
        default=None, repr=False, init=False
    )
    _holder: list[_Kernel | None] = field(default_factory=lambda: [None], repr=False, init=False)
    _own_host: bool = field(default=False, repr=False, init=False)

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise ValueError(f"timeout={self.timeout!r}: give a positive number of seconds")
        if self.interrupt_grace < 0:
            raise ValueError(f"interrupt_grace={self.interrupt_grace!r}: give 0 or more seconds")
        if self.max_output < 0:
            raise ValueError(f"max_output={self.max_output!r}: give 0 or more characters")

    # --- the notebook so far -------------------------------------------------------

    @property
    def cells(self) -> list[NotebookNode]:
        """The cells given so far, in order (a copy of the list, not of the cells)."""
        return list(self._cells)

    @property
    def pid(self) -> int | None:
        """The running kernel's pid (its process group id too), or None."""
        return self._kernel.pid if self._kernel is not None else None

    # --- V2 --------------------------------------------------------------------------

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        source = action.command
        if source.startswith(MARKDOWN):
            self._cells.append(markdown_cell(source[len(MARKDOWN) :]))
            return Success(Observation(f"markdown cell {len(self._cells)} added", 0))
        with self._lock:
            return self._code(source)

    def _code(self, source: str) -> Result[Observation, Submitted | ExecutionError]:
        cell = code_cell(source)
        self._cells.append(cell)
        number = len(self._cells)
        problem = syntax_problem(source)
        if problem is not None:
            _status(cell, "syntax_error")
            text = f"cell {number} was not run: {problem}\nFix the syntax and send the cell again."
            return Success(Observation(text, 1))
        if stopped():  # a supervisor is ending the run (four.batch): start nothing
            _status(cell, "lost")
            return Success(Observation(f"cell {number} was not run: the run is being stopped", -9))
        if self._kernel is None:
            started = self._start()
            if isinstance(started, Failure):
                _status(cell, "lost")
                if stopped():  # killed while it started: the run's end, not the kernel's
                    text = f"cell {number} was not run: the run is being stopped"
                    return Success(Observation(text, -9))
                return Failure(started.failure())
        kernel = self._kernel
        assert kernel is not None
        limit = whole_seconds(self.timeout)
        began = time.monotonic()
        try:
            ran = kernel.execute(cell, limit, self.interrupt_grace)
        except BaseException:  # Ctrl-C: the run ends here, and this cell with it
            _status(cell, "lost")
            raise
        took = time.monotonic() - began
        status: Status
        notes: list[str] = []
        if ran == "lost":
            status = "lost"
            notes.append(self._restart("the kernel died" if kernel.dead() else "it did not stop"))
        elif (
            (error := error_of(cell.outputs)) is not None
            and error.get("ename") == "KeyboardInterrupt"
            and took >= limit
        ):
            status = "timed_out"
            notes.append(
                f"The cell was interrupted at its timeout ({limit} s); the kernel "
                "kept its state (variables set before the interruption are still there)."
            )
        else:
            status = "error" if error_of(cell.outputs) is not None else "ok"
        _status(cell, status)
        if status == "ok":
            submitted = self._submission(cell)
            if submitted is not None:
                return Failure(Submitted(submitted))
        lines = [_headline(number, status, cell)]
        # An interrupted cell's KeyboardInterrupt traceback says nothing the note does not.
        shown = [
            o for o in cell.outputs if status != "timed_out" or o.get("output_type") != "error"
        ]
        lines += describe_outputs(shown, self.max_output, self._figures)
        made = len(figures(cell.outputs))
        # The run-wide numbers the model was told: `four show` and `four view` use them.
        cell.metadata["four"]["figures"] = list(range(self._figures + 1, self._figures + made + 1))
        self._figures += made
        lines += notes
        code = 0 if status == "ok" else (124 if status in ("timed_out", "lost") else 1)
        timed_out = status == "timed_out" or (status == "lost" and took >= limit)
        return Success(Observation("\n".join(lines), code, timed_out, took))

    def _submission(self, cell: NotebookNode) -> str | None:
        """A cell whose output starts with the exit-signal line submits the rest."""
        if not self.exit_signal:
            return None
        text = streams(cell.outputs, "stdout").lstrip()
        first, _, rest = text.partition("\n")
        return rest.strip("\n") if first.strip() == self.exit_signal else None

    # --- the kernel ------------------------------------------------------------------

    def _start(self) -> Result[None, ExecutionError]:
        if self._finalizer is None:
            self._finalizer = weakref.finalize(self, _shutdown, self._holder)
        try:
            host = self._host()
        except (OSError, ValueError) as exc:
            return Failure(ExecutionError(f"the Jupyter kernel has no place to run: {exc}"))
        if host.kind == "local":
            environment = command_env(self.inherit, self.deny, self.env)
        else:
            environment = host.environment(self.env)
        environment.pop("MPLBACKEND", None)  # Agg here would capture no figure: keep inline
        try:
            kernel = _Kernel.start(
                self.kernel_name, self.cwd or host.workspace, environment, self.startup_timeout,
                host,
            )  # fmt: skip
        except Exception as exc:  # jupyter_client, zmq, the file system: one typed error
            return Failure(ExecutionError(f"the Jupyter kernel did not start: {exc}"))
        self._kernel = self._holder[0] = kernel
        return Success(None)

    def _restart(self, why: str) -> str:
        self._stop()
        if stopped():  # killed by a supervisor: the run is ending, no new kernel
            return "The kernel was stopped: the run is being stopped."
        self.restarts += 1
        started = self._start()
        lost = (
            f"The kernel was restarted ({why}): its state was lost; run the cells it needs again."
        )
        if isinstance(started, Failure):
            return f"{lost} {started.failure().message}"
        return lost

    def _stop(self) -> None:
        kernel, self._kernel, self._holder[0] = self._kernel, None, None
        if kernel is not None:
            kernel.shutdown()

    def _host(self) -> ToolHost:
        if self.host is None:
            self.host = tool_host("local", self.cwd or os.getcwd(), timeout=self.timeout)
            self._own_host = True
        return self.host

    def fresh(self, **changes: Any) -> KernelEnv:
        """A new environment with this one's settings (and ``changes``) whose kernel runs
        in the same place (the same sandbox or container); closing it leaves that place
        as it is."""
        settings = {f: getattr(self, f) for f in _SETTINGS}
        return KernelEnv(**{**settings, "host": self._host(), **changes})

    def close(self) -> None:
        """End the kernel and every process a cell started; delete its private folder
        (and end the place it ran in, if this environment made it or was given it by
        its domain)."""
        with self._lock:
            self._stop()
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
            if self._own_host and self.host is not None:
                self.host.close()
                self.host, self._own_host = None, False

    def owns_host(self) -> KernelEnv:
        """Make ``close()`` end the host too (a domain hands its host over); returns self."""
        self._own_host = self.host is not None
        return self


_SETTINGS = (
    "timeout", "max_output", "cwd", "env", "kernel_name", "startup_timeout", "exit_signal",
    "inherit", "deny", "interrupt_grace",
)  # fmt: skip


def _shutdown(holder: list[_Kernel | None]) -> None:
    kernel = holder[0]
    holder[0] = None
    if kernel is not None:
        kernel.shutdown()


def whole_seconds(timeout: float) -> int:
    """nbclient counts a cell's timeout in whole seconds: ours, rounded up.

    >>> whole_seconds(0.5), whole_seconds(2.0), whole_seconds(2.1)
    (1, 2, 3)
    """
    return max(1, math.ceil(timeout))


def _status(cell: NotebookNode, status: Status) -> None:
    cell.metadata["four"] = {"status": status}


def _headline(number: int, status: Status, cell: NotebookNode) -> str:
    """The observation's first line. No duration: the same cell gives the same text (the
    duration is the observation's own field), so a replay compares like with like."""
    count = cell.get("execution_count")
    label = f"cell {number}" + (f" (In [{count}])" if count else "")
    said = {
        "ok": "ran",
        "error": "raised an error",
        "timed_out": "timed out",
        "lost": "was lost with the kernel",
        "syntax_error": "was not run",
    }[status]
    return f"{label} {said}"


def syntax_problem(source: str) -> str | None:
    """Why ``source`` cannot run (a ``SyntaxError`` with its line), or None. IPython's
    own syntax (``%magic``, ``!shell``) is translated first, as the kernel does.

    >>> syntax_problem("x = (1,")
    "SyntaxError: '(' was never closed (line 1)\\n    x = (1,\\n        ^"
    >>> syntax_problem("%time x = 1") is None
    True
    """
    code = _ipython_to_python(source)
    try:
        ast.parse(code)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        text = f"SyntaxError: {exc.msg}{where}"
        line = source.splitlines()[exc.lineno - 1] if exc.lineno and code == source else ""
        if line.strip() and exc.offset:
            text += f"\n    {line}\n    {' ' * (exc.offset - 1)}^"
        return text
    except ValueError as exc:  # a NUL byte
        return f"SyntaxError: {exc}"
    return None


def _ipython_to_python(source: str) -> str:
    if "%" not in source and "!" not in source and "?" not in source:
        return source
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return source
    try:
        return str(TransformerManager().transform_cell(source))  # type: ignore[no-untyped-call]
    except Exception:  # IPython's transformer fails on some broken input: ast judges it
        return source


@dataclass(eq=False, slots=True)
class _Kernel:
    """One running kernel: its client, manager, private folder, event loop, and how it
    was contained (its launcher's pid is ``pid``)."""

    client: NotebookClient
    loop: asyncio.AbstractEventLoop
    folder: str
    pid: int
    contained: Contained
    output: Tail
    ended: bool = False

    @property
    def mark(self) -> str:
        return self.contained.mark

    @classmethod
    def start(
        cls,
        name: str,
        cwd: str,
        environment: dict[str, str],
        startup_timeout: float,
        host: ToolHost,
    ) -> _Kernel:
        import zmq
        import zmq.asyncio
        from jupyter_client.kernelspec import KernelSpec

        manager_class, client_class = _bounded()
        folder = tempfile.mkdtemp(prefix="four-kernel-", dir=host.folder)
        # A profile of its own, and no user site: what a cell of an earlier kernel left in
        # ~/.ipython (a startup file) or in the user's site-packages does not run here (the
        # notebook check's fresh kernel must start from nothing but the notebook).
        # PYTHONSAFEPATH: `python -m ipykernel_launcher` does not look in the workspace
        # first (an ipykernel_launcher.py there would be a kernel that says every cell
        # ran); the warm-up puts the workspace on the path afterwards, for the cells.
        environment = {**environment, "PYTHONNOUSERSITE": "1", "PYTHONSAFEPATH": "1",
                       "IPYTHONDIR": os.path.join(folder, "ipython")}  # fmt: skip
        loop = asyncio.new_event_loop()
        # A message larger than this from the kernel drops its connection (zmq reconnects):
        # a hostile cell cannot make this process hold gigabytes (see MESSAGE_LIMIT).
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MESSAGE_LIMIT)
        manager = manager_class(
            kernel_name=name,
            transport="ipc",  # sockets in our private folder: no port to race for
            ip=os.path.join(folder, "ipc"),
            connection_file=os.path.join(folder, "kernel.json"),
            context=context,
            log=_QUIET,
        )
        contained: Contained | None = None
        output: Tail | None = None
        kernel: _Kernel | None = None
        try:
            spec = manager.kernel_spec_manager.get_kernel_spec(name)
            argv = list(spec.argv)
            if argv and os.path.basename(argv[0]).startswith("python"):
                argv[0] = host.python  # "python" would be our sys.executable (jupyter's rule)
            contained = host.contain(argv, cwd=cwd, env=environment)
            # Our spec: the kernel behind its launcher, interrupted by a message (a signal
            # to the launcher would not reach it).
            manager._kernel_spec = KernelSpec(
                argv=contained.argv,
                display_name=spec.display_name,
                language=spec.language,
                interrupt_mode="message",
                metadata={},
                resource_dir=spec.resource_dir,
            )
            client = client_class(
                notebook(),
                km=manager,
                timeout=None,
                startup_timeout=int(max(1, startup_timeout)),
                interrupt_on_timeout=True,
                allow_errors=True,
                shutdown_kernel="immediate",
                record_timing=False,
                kernel_name=name,
                log=_QUIET,
            )
            output = Tail()
            launched = client.async_start_new_kernel(
                cwd=contained.cwd or cwd, env=contained.env, stdout=output.fd, stderr=output.fd
            )
            loop.run_until_complete(launched)
            output.started()
            pid = int(manager.provisioner.process.pid)  # type: ignore[union-attr]
            kernel = cls(client, loop, folder, pid, contained, output)
            # Under a supervisor (four.batch, four run --timeout): a start can be stopped.
            command = running(pid, contained.mark, contained.kill_inside)
            try:
                loop.run_until_complete(client.async_start_new_kernel_client())
                assert client.kc is not None
                # The font cache is built here, before any cell's timeout starts.
                warm = client.kc.execute_interactive(  # type: ignore[attr-defined]
                    _WARM_UP, store_history=False, output_hook=_ignore, timeout=startup_timeout
                )
                loop.run_until_complete(warm)
            except Exception as exc:
                said = output.text()
                raise RuntimeError(f"{exc}{': ' + said if said else ''}") from exc
            finally:
                if command is not None:
                    command.release()
            return kernel
        except BaseException:
            if kernel is not None:
                kernel.shutdown()
            else:
                with contextlib.suppress(Exception):
                    loop.run_until_complete(_shut(manager))
                loop.close()
                context.destroy(linger=0)
                if contained is not None:
                    contained.end()
                if output is not None:
                    output.close()
                shutil.rmtree(folder, ignore_errors=True)
            raise

    def dead(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return _zombie(self.pid)

    def execute(self, cell: NotebookNode, timeout: int, grace: float) -> Literal["done", "lost"]:
        """Run ``cell``; at ``timeout`` interrupt it, and ``grace`` seconds later give up."""
        from nbclient.exceptions import DeadKernelError
        from nbformat.v4 import new_output

        client = self.client
        client.nb.cells.append(cell)  # nbclient finds display updates by index there
        index = len(client.nb.cells) - 1
        client.timeout = timeout
        command = running(self.pid, self.mark, self.contained.kill_inside)
        task = self.loop.create_task(
            asyncio.wait_for(client.async_execute_cell(cell, index), timeout + grace)
        )
        try:
            self.loop.run_until_complete(task)
        except KeyboardInterrupt:  # Ctrl-C here: the run ends, and closes us
            if task.done() and not task.cancelled():
                task.exception()  # seen, so asyncio does not report it at exit
            task.cancel()
            raise
        except TimeoutError:
            return "lost"  # the interrupt did not stop it
        except DeadKernelError:
            return "lost"
        except Exception as exc:  # a broken channel: the kernel cannot be trusted any more
            cell.outputs.append(error_output(type(exc).__name__, str(exc)))
            return "lost"
        finally:
            if command is not None:
                command.release()
        if index not in client.__dict__.get("_four_idle", ()):
            # The kernel never said it was idle: its output channel was dropped (a message
            # over MESSAGE_LIMIT). A new client connects afresh; the kernel keeps its state.
            cell.outputs.append(new_output("stream", name="stderr", text=LOST_OUTPUT))  # type: ignore[no-untyped-call]
            with contextlib.suppress(Exception):
                assert client.kc is not None
                client.kc.stop_channels()
                self.loop.run_until_complete(client.async_start_new_kernel_client())
        return "done"

    def shutdown(self) -> None:
        """Kill the kernel's launcher (and with it all the kernel started), what is left
        of it inside a container, then let ``jupyter_client`` clean up; the folder is
        removed."""
        if self.ended:
            return
        self.ended = True
        kill_group(self.pid)
        kill_marked(self.mark)
        manager = self.client.km
        try:
            self.contained.kill_inside()
            if not self.loop.is_closed():
                _cancel_all(self.loop)
                with contextlib.suppress(Exception):
                    if self.client.kc is not None:
                        self.client.kc.stop_channels()
                if manager is not None:
                    with contextlib.suppress(Exception):
                        self.loop.run_until_complete(_shut(manager))
                self.loop.close()
            manager_context = getattr(manager, "context", None)
            if manager_context is not None:
                manager_context.destroy(linger=0)
        finally:
            _reap(self.pid)
            self.contained.release()
            self.output.close()
            shutil.rmtree(self.folder, ignore_errors=True)


_QUIET = logging.getLogger("four.notebook.kernel")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
"""jupyter_client's and nbclient's log: it may quote what a kernel sent (an unknown message
type, raw), and what matters reaches the model as the cell's observation, not stderr."""

MESSAGE_LIMIT = 64 << 20
"""Bytes of the largest message taken from a kernel (a larger one is dropped unread)."""

CELL_OUTPUT_LIMIT = 16 << 20
"""Characters of output kept of one cell (text, images' base64...); the rest is dropped,
and a line says so. Memory and the saved notebook stay bounded whatever a cell prints."""

DROPPED = f"[four: output past {CELL_OUTPUT_LIMIT >> 20} MiB in this cell was dropped]\n"
LOST_OUTPUT = (
    f"[four: output of this cell was lost: a message over {MESSAGE_LIMIT >> 20} MiB; "
    "the kernel kept its state]\n"
)


@functools.cache
def _bounded() -> tuple[type[AsyncKernelManager], type[NotebookClient]]:
    """A kernel manager whose client shares its (bounded) zmq context, and a notebook
    client that keeps at most ``CELL_OUTPUT_LIMIT`` of each cell's outputs."""
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbformat.v4 import new_output

    class Manager(AsyncKernelManager):
        def client(self, **kwargs: Any) -> Any:
            return super().client(context=self.context, **kwargs)

    class Client(NotebookClient):
        def process_message(
            self, msg: dict[str, Any], cell: NotebookNode, cell_index: int
        ) -> NotebookNode | None:
            content = msg.get("content")
            idle = isinstance(content, dict) and content.get("execution_state") == "idle"
            if msg.get("msg_type") == "status" and idle:
                self.__dict__.setdefault("_four_idle", set()).add(cell_index)
            return super().process_message(msg, cell, cell_index)

        def output(
            self,
            outs: list[NotebookNode],
            msg: dict[str, Any],
            display_id: str | None,
            cell_index: int,
        ) -> NotebookNode | None:
            used: dict[int, int] = self.__dict__.setdefault("_four_used", {})
            size = _size(msg.get("content"))
            before = used.get(cell_index, 0)
            used[cell_index] = before + size
            if before + size <= CELL_OUTPUT_LIMIT:
                return super().output(outs, msg, display_id, cell_index)
            if before > CELL_OUTPUT_LIMIT:
                return None  # past the limit already: said so
            kept = None
            content = msg.get("content")
            if msg.get("msg_type") == "stream" and isinstance(content, dict):
                head = str(content.get("text", ""))[: CELL_OUTPUT_LIMIT - before]
                msg = {**msg, "content": {**content, "text": head}}
                kept = super().output(outs, msg, display_id, cell_index)
            outs.append(new_output("stream", name="stderr", text=DROPPED))  # type: ignore[no-untyped-call]
            return kept

    return Manager, Client


def _size(content: object) -> int:
    """Roughly how many characters a message's content holds (its strings)."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, dict):
        return sum(_size(v) for v in content.values())
    if isinstance(content, list):
        return sum(_size(v) for v in content)
    return 8


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    """End the tasks an interrupted cell left (nbclient's pollers) before the loop closes."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    with contextlib.suppress(BaseException):
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


async def _shut(manager: KernelManager) -> None:
    """jupyter_client's own clean-up (connection file, sockets), bounded."""
    from jupyter_core.utils import ensure_async

    await asyncio.wait_for(ensure_async(manager.shutdown_kernel(now=True)), 10)


def _ignore(message: Mapping[str, Any]) -> None:
    """The warm-up's output goes nowhere."""


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def _reap(pid: int) -> None:
    """Collect the kernel if it is our child and jupyter_client did not."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def kernel_env(
    timeout: float = 60.0,
    *,
    max_output: int = 10_000,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    kernel_name: str = "python3",
    startup_timeout: float = 60.0,
    exit_signal: str = EXIT_SIGNAL,
    inherit: tuple[str, ...] = DEFAULT_INHERIT,
    deny: tuple[str, ...] = SECRET_PATTERNS,
    interrupt_grace: float = 5.0,
    host: ToolHost | None = None,
) -> KernelEnv:
    """V2 for Python cells: one Jupyter kernel per run, so state carries from cell to cell.

    Each cell is parsed with ``ast`` first (IPython's ``%`` and ``!`` syntax allowed): a
    syntax error is an observation and the cell is never run. The observation shows the
    cell's stdout, stderr and result (each cut to ``max_output`` characters, head and
    tail), the error's name and message with a trimmed traceback, and a line per figure
    (``figure 1: 640x480 PNG``; matplotlib draws inline). A cell past ``timeout`` seconds
    (whole seconds, rounded up) is interrupted and the kernel keeps its state; if the
    interrupt does not stop it within ``interrupt_grace`` seconds, the kernel is
    restarted and the model is told its state was lost. The kernel starts at the first
    code cell (within ``startup_timeout``, matplotlib's font cache built before any
    cell's timeout); ``close()`` (or the end of ``run``) kills it and every process its
    cells started. A cell whose output starts with the exit-signal line submits the rest
    of its output. A kernel that cannot start is an ``ExecutionError``.

    The kernel runs in ``host`` (a ``four.execute`` ``ToolHost``: the sandbox, or a
    container, of the run), or, by default, here in a PID namespace of its own: it sees
    no other process, none of the driver's secrets, and every process a cell starts,
    however it detaches, ends with the kernel. What a cell writes to its file
    descriptors 1 and 2 directly is captured, never written to this process's terminal.

    >>> from four import Action
    >>> with kernel_env(timeout=10) as env:
    ...     _ = env(Action("x = 41"))
    ...     print(env(Action("x + 1")).unwrap().content.splitlines()[1:])
    ['[result]', '42']
    """
    return KernelEnv(
        timeout,
        max_output,
        cwd,
        dict(env or {}),
        kernel_name,
        startup_timeout,
        exit_signal,
        tuple(inherit),
        tuple(deny),
        interrupt_grace,
        host,
    )
