"""A Ray cluster of three nodes on this host, started with Ray's own command line: a head
on 127.0.0.2 and workers on 127.0.0.3 and 127.0.0.4 (Ray rewrites 127.0.0.1).

Each worker node runs in a mount namespace of its own where the ``hidden`` folders are
empty (a tmpfs over each: the driver's batch folder, so nothing reaches it through a
shared disk), with its own temporary folder (``TMPDIR``: the actors' scratch). Node
health is checked every 0.5 s, so a lost node counts as dead within a few seconds.

Only the processes started here are stopped (never ``ray stop``: other clusters may
share the machine).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.batch.conftest import WORKER_PATH

HEAD = "127.0.0.2"
WORKERS = ("127.0.0.3", "127.0.0.4")
HEALTH = {
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 500,
    "health_check_failure_threshold": 4,
}

PATIENT = {
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 10000,
    "health_check_failure_threshold": 20,
    "gcs_rpc_server_reconnect_timeout_s": 300,
}
"""Health checks for a host starved of CPU (a long batch niced under other work): a node
is dead after ~20 s of failed checks, and a driver waits up to 5 min for a slow GCS.
With ``HEALTH`` a raylet that gets no CPU for ~3 s is marked dead by the GCS and exits;
on the head, ``ray start --block`` then kills every process of the node, the GCS too
(the driver ends: "Failed to connect to GCS within 60 seconds")."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))  # (Ray's servers listen on every interface)
        return int(s.getsockname()[1])


def _ports() -> list[str]:
    """Ports of a node's own servers: Ray's defaults would collide on one host."""
    names = ("object-manager-port", "metrics-export-port", "dashboard-agent-listen-port",
             "dashboard-agent-grpc-port", "runtime-env-agent-port")  # fmt: skip
    chosen = ["--node-manager-port=0", "--min-worker-port=0", "--max-worker-port=0"]
    return [*chosen, *(f"--{name}={_free_port()}" for name in names)]


class Cluster:
    """The running cluster: ``address`` to join it. ``health`` is the head's node health
    checks (``HEALTH``: a lost node is dead within ~3 s)."""

    def __init__(
        self, root: Path, hidden: list[Path], health: dict[str, int] | None = None
    ) -> None:
        self.root = root
        self.hidden = hidden
        self.health = HEALTH if health is None else health
        self.port = _free_port()
        self.address = f"{HEAD}:{self.port}"
        self.starters: dict[str, subprocess.Popen[bytes]] = {}
        # Ray's sockets live under its temp dir: a path short enough for a socket's name.
        self.temp = Path(tempfile.mkdtemp(prefix="four-ray-"))

    def scratch(self, ip: str) -> Path:
        """The node's temporary folder (short: Ray makes sockets there too)."""
        return self.temp / f"n{ip.rsplit('.', 1)[-1]}"

    def _ray(self) -> str:
        return str(Path(sys.executable).parent / "ray")

    def _env(self, scratch: Path) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": WORKER_PATH,
            "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0",
            "TMPDIR": str(scratch),
        }

    def start(self) -> None:
        common = ["--num-cpus=1", "--disable-usage-stats", "--block"]
        self.root.mkdir(parents=True, exist_ok=True)
        scratch = self.scratch(HEAD)
        scratch.mkdir()
        head = [
            self._ray(), "start", "--head", f"--node-ip-address={HEAD}", f"--port={self.port}",
            "--include-dashboard=false", f"--system-config={json.dumps(self.health)}",
            f"--temp-dir={self.temp}", "--object-store-memory=80000000", *common,
            *_ports(),
        ]  # fmt: skip
        self.starters[HEAD] = self._spawn(head, scratch, self.hidden)
        # One node at a time: nodes starting at once on one host race for the same
        # socket names in the shared session folder.
        self._wait_nodes(1)
        for n, ip in enumerate(WORKERS, start=2):
            scratch = self.scratch(ip)
            scratch.mkdir()
            worker = [
                self._ray(), "start", f"--address={self.address}", f"--node-ip-address={ip}",
                "--object-store-memory=80000000", *common, *_ports(),
            ]  # fmt: skip
            self.starters[ip] = self._spawn(worker, scratch, self.hidden)
            self._wait_nodes(n)

    def _spawn(self, argv: list[str], scratch: Path, hidden: list[Path]) -> subprocess.Popen[bytes]:
        mounts = "".join(f"mount -t tmpfs tmpfs {shlex.quote(str(h))} && " for h in hidden)
        script = f"{mounts}exec {shlex.join(argv)}"
        with open(self.root / f"node-{len(self.starters)}.log", "wb") as log:  # the child's
            return subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                env=self._env(scratch),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )

    def alive_nodes(self) -> list[str]:
        """The alive nodes' addresses, as the head says."""
        ask = (
            f"import json, ray; ray.init(address={self.address!r}, log_to_driver=False); "
            "print('NODES', json.dumps(sorted(n['NodeManagerAddress'] for n in ray.nodes() "
            "if n['Alive'])))"
        )
        done = subprocess.run(
            [sys.executable, "-c", ask], env=self._env(self.root), capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        # Ray's own log lines may come to stdout too, before or after ours (at shutdown)
        said = [line for line in done.stdout.splitlines() if line.startswith("NODES ")]
        if done.returncode != 0 or not said:
            return []
        return list(json.loads(said[-1].removeprefix("NODES ")))

    def _wait_nodes(self, n: int) -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if len(self.alive_nodes()) >= n:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the cluster did not reach {n} nodes: {self.alive_nodes()}")

    def processes(self, ip: str) -> list[int]:
        """Every process of the node started for ``ip``: its session, and its actors."""
        starter = self.starters[ip]
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdecimal():
                continue
            with contextlib.suppress(OSError):
                if os.getsid(int(entry)) == starter.pid:
                    found.append(int(entry))
        return sorted({*found, *self.actors(ip)})

    def actors(self, ip: str) -> list[int]:
        """The node's actor processes: Ray names them ``ray::<class>``, and they have
        the node's ``TMPDIR`` (they may be in sessions of their own)."""
        mark = f"TMPDIR={self.scratch(ip)}".encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdecimal():
                continue
            with contextlib.suppress(OSError):
                if not Path(f"/proc/{entry}/cmdline").read_bytes().startswith(b"ray::_Actor"):
                    continue
                if mark in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.append(int(entry))
        return found

    def wait_no_actors(self, ip: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.actors(ip) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not self.actors(ip), f"actors still on {ip}"

    def raylet(self, ip: str) -> int:
        for pid in self.processes(ip):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                    return pid
        raise RuntimeError(f"no raylet for {ip}")

    def signal_node(self, ip: str, sig: int) -> None:
        for pid in self.processes(ip):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def stop(self) -> None:
        """Kill every process of every node (test nodes: nothing to save)."""
        for ip, starter in self.starters.items():
            self.signal_node(ip, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                starter.wait(timeout=10)
        shutil.rmtree(self.temp, ignore_errors=True)


@contextlib.contextmanager
def three_nodes(
    root: Path, hidden: list[Path], health: dict[str, int] | None = None
) -> Iterator[Cluster]:
    cluster = Cluster(root, hidden, health)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
