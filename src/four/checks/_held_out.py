"""Held-out files: what a check brings that the agent never sees (docs/verified.md)."""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TypeAlias

from returns.result import Failure, Result, Success

from four._checked import checked
from four._files import Unreadable, read_regular
from four._sparse import Allowance, CopyTooLarge, copy_sparse
from four._types import Action, Checked, Execute

if TYPE_CHECKING:  # imported when a held-out check first runs
    from four.execute import DockerEnv

Source: TypeAlias = "str | os.PathLike[str] | bytes"
"""A file or folder on this machine, or (bytes) a file's content."""

_COPIED = (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK)

MAX_BYTES = 64 << 20
"""Held-out files are kept in memory: at most this many bytes in all."""


@dataclass(frozen=True, slots=True)
class HeldOutFiles(Checked):
    """Files to put in place (relative path, content, mode) and the places they fill."""

    entries: tuple[tuple[str, bytes, int], ...] = field(repr=False)
    places: tuple[str, ...]

    def write(self, folder: Path) -> None:
        """Replace each place under ``folder`` with the held-out files (so nothing the
        agent left there, a conftest.py say, stays beside them). A symlink the agent
        left on the way is replaced by a folder, so nothing is written outside ``folder``."""
        for place in self.places:
            parts = PurePosixPath(place).parts
            for depth in range(1, len(parts)):
                parent = folder.joinpath(*parts[:depth])
                if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
                    parent.unlink()
                parent.mkdir(exist_ok=True)
            target = folder / place
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
        for relative, content, mode in self.entries:
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
            path.chmod(mode)


@checked
def held_out_files(files: Mapping[str, Source]) -> HeldOutFiles:
    """Read ``files`` (destination relative to the workspace -> source) now; a
    destination ending in ``/`` is a folder (docs/verified.md).

    >>> held_out_files({"expected.txt": b"42"}).places
    ('expected.txt',)
    """
    entries: list[tuple[str, bytes, int]] = []
    places: list[str] = []
    for destination, source in files.items():
        path = PurePosixPath(destination)
        if not destination.strip("/") or path.is_absolute() or ".." in path.parts:
            raise ValueError(
                f"files: {destination!r} must be a path inside the workspace "
                "(relative, without '..'), e.g. 'tests_hidden/'"
            )
        place = str(path)
        places.append(place)
        try:
            entries += _read(place, destination.endswith("/"), source)
        except (OSError, Unreadable) as exc:  # never a FIFO waited on, nor a device read
            raise ValueError(f"files[{destination!r}]: cannot read {source!r}: {exc}") from None
    if sum(len(content) for _, content, _ in entries) > MAX_BYTES:
        raise ValueError(f"files: more than {MAX_BYTES >> 20} MiB of held-out files")
    return HeldOutFiles(tuple(entries), tuple(places))


def _read(place: str, folder: bool, source: Source) -> list[tuple[str, bytes, int]]:
    if isinstance(source, bytes):
        if folder:
            raise ValueError(f"files: {place}/ is a folder: give a folder, not bytes")
        return [(place, source, 0o644)]
    root = Path(source)
    if root.is_dir():
        if not folder:
            raise ValueError(f"files: {source!r} is a folder: end the destination with '/'")
        found = sorted(p for p in root.rglob("*") if p.is_file())
        return [_file(f"{place}/{p.relative_to(root)}", p) for p in found]
    relative = f"{place}/{root.name}" if folder else place
    return [_file(relative, root)]


def _file(relative: str, path: Path) -> tuple[str, bytes, int]:
    data = read_regular(path, max_bytes=MAX_BYTES)
    return relative, data, stat.S_IMODE(path.stat().st_mode) | 0o600


@contextlib.contextmanager
def isolated(env: Execute, files: HeldOutFiles, timeout: float) -> Iterator[Result[Execute, str]]:
    """An environment like ``env`` over a copy of its workspace holding ``files``;
    deleted on leaving. Failure says why there is none (an unknown environment, a
    copy that failed)."""
    from four.execute import DockerEnv, LocalEnv, SandboxEnv, ShellEnv

    base = env  # under the wrappers (a display's, a supervisor's) that keep it as ``inner``
    for _ in range(8):
        if not callable(inner := getattr(base, "inner", None)):
            break
        base = inner
    made: Result[Execute, str]
    with contextlib.ExitStack() as stack:
        try:
            if isinstance(base, LocalEnv | ShellEnv):
                work = _copy(base.cwd or os.getcwd(), stack, files)
                local = LocalEnv(
                    timeout, base.max_output, base.exit_signal, str(work), base.env,
                    base.inherit, base.deny, base.shell, base.limits,
                )  # fmt: skip
                made = Success(stack.enter_context(contextlib.closing(local)))  # its launcher
            elif isinstance(base, SandboxEnv):
                work = _copy(base.folder, stack, files, base.hide)
                # Built anew: dataclasses.replace would share the agent's folder finaliser.
                sandbox = SandboxEnv(
                    timeout, base.max_output, base.exit_signal, str(work), base.network,
                    base.env, base.inherit, base.deny, base.ro_binds, base.bwrap, base.limits,
                )  # fmt: skip
                made = Success(stack.enter_context(contextlib.closing(sandbox)))
            elif isinstance(base, DockerEnv):
                made = _docker_copy(stack, base, files, timeout)
            else:
                made = Failure(
                    "held-out files need local_env, shell_env, sandbox_env or docker_env, "
                    f"not {type(base).__name__}"
                )
        except (OSError, subprocess.SubprocessError, CopyTooLarge) as exc:
            made = Failure(f"cannot make the check's copy of the workspace: {exc}")
        yield made


def _scratch(stack: contextlib.ExitStack) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="four-check-"))  # mode 0700
    stack.callback(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _copy(
    source: str, stack: contextlib.ExitStack, files: HeldOutFiles, hidden: tuple[str, ...] = ()
) -> Path:
    """A copy of the workspace ``source`` with the held-out files; ``hidden`` folders
    (the run's own output, hidden from the agent) are left out."""
    work = _scratch(stack) / "work"

    def ignore(folder: str, names: list[str]) -> list[str]:
        # FIFOs, sockets, devices are not copied: copying one fails (a FIFO the agent made
        # would deny every judgement)
        paths = ((n, os.path.join(folder, n)) for n in names)
        return [
            n for n, p in paths if p in hidden or stat.S_IFMT(os.lstat(p).st_mode) not in _COPIED
        ]

    # Holes stay holes, and the data copied is bounded.
    copy = functools.partial(copy_sparse, allowance=Allowance())
    shutil.copytree(source, work, symlinks=True, ignore=ignore, copy_function=copy)
    files.write(work)
    return work


def _docker_copy(
    stack: contextlib.ExitStack, base: DockerEnv, files: HeldOutFiles, timeout: float
) -> Result[Execute, str]:
    from four.execute import DockerEnv
    from four.execute._docker import run_docker

    started = base.start()
    if isinstance(started, Failure):
        return Failure(started.failure().message)
    image = f"four-check-{os.urandom(6).hex()}"
    committed, said = run_docker(base.docker, "commit", started.unwrap(), image, timeout=300)
    if not committed:
        return Failure(f"cannot commit the agent's container: {said}")
    # Unwound after the container goes:
    stack.callback(run_docker, base.docker, "rmi", "-f", image, timeout=300)
    # A container of the committed image, without the agent's run_args: no mount of a
    # host folder the agent shares can receive the held-out files.
    copy = DockerEnv(
        image, timeout, base.max_output, base.exit_signal, base.cwd, base.env, base.network,
        docker=base.docker, deny=base.deny, limits=base.limits,
    )  # fmt: skip
    stack.callback(copy.close)
    running = copy.start()
    if isinstance(running, Failure):
        return Failure(running.failure().message)
    places = " ".join(shlex.quote(p) for p in files.places)
    copy(Action(f"rm -rf -- {places}"))
    folder = _scratch(stack)
    files.write(folder)
    into = f"{running.unwrap()}:{base.cwd.rstrip('/')}/"
    copied, said = run_docker(base.docker, "cp", f"{folder}/.", into, timeout=300)
    if not copied:
        return Failure(f"cannot copy the held-out files into the check's container: {said}")
    return Success(copy)
