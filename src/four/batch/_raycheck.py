"""``four doctor batch --ray ADDRESS``: the cluster joined, its alive nodes, and on each a
small task pinned there: its scratch folder writable, the model's endpoint reachable (a
TCP connection). Imported only by ``four doctor`` (it imports Ray)."""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Callable
from typing import Protocol, cast
from urllib.parse import urlsplit

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from four.batch._ray import cluster_nodes, first_line
from four.observe._check import Check


class _Task(Protocol):
    def options(self, **kwargs: object) -> _Task: ...
    def remote(self, *args: object) -> ray.ObjectRef[tuple[str, str]]: ...


WITHIN = 60.0
"""Seconds each node has to answer."""


def _on_node(scratch: str | None, endpoint: tuple[str, int] | None) -> tuple[str, str]:
    """Run on a node: what went wrong with its scratch folder and with the endpoint
    ("" when fine)."""
    folder = scratch or tempfile.gettempdir()
    try:
        with tempfile.TemporaryFile(dir=folder):  # made and gone
            wrote = ""
    except OSError as exc:
        wrote = f"{folder}: {exc.strerror or exc}"
    reached = ""
    if endpoint is not None:
        try:
            socket.create_connection(endpoint, timeout=10).close()
        except OSError as exc:
            reached = f"{endpoint[0]}:{endpoint[1]}: {exc.strerror or exc}"
    return wrote, reached


def cluster_checks(address: str, api_base: str | None, scratch: str | None = None) -> list[Check]:
    """The cluster's checks: reachable, its nodes, and each node's scratch and model
    endpoint (``api_base``; a hosted provider's is not checked from the nodes)."""
    try:
        cast(Callable[..., object], ray.init)(address=address, log_to_driver=False)
    except Exception as exc:  # ConnectionError, a timeout, a version mismatch...
        why = first_line(exc)
        return [Check("ray", "NO-GO", f"{address}: {why}", "start the cluster, or fix --ray")]
    try:
        nodes = [n for n in cluster_nodes() if n.get("Alive")]
        checks = [Check("ray", "GO", f"{address}: joined (Ray {ray.__version__})")]
        if not nodes:
            return [*checks, Check("nodes", "NO-GO", "no node is alive", "start the workers")]
        names = ", ".join(sorted(str(n.get("NodeManagerAddress")) for n in nodes))
        checks.append(Check("nodes", "GO", f"{len(nodes)} alive: {names}"))
        parts = urlsplit(api_base) if api_base else None
        endpoint = None
        if parts is not None and parts.hostname:
            endpoint = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        remote = cast(Callable[..., Callable[[object], _Task]], ray.remote)  # (overloads omit it)
        task = remote(num_cpus=0, max_retries=0)(_on_node)
        refs = {
            str(n.get("NodeManagerAddress")): task.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(str(n["NodeID"]), soft=False)
            ).remote(scratch, endpoint)
            for n in nodes
        }
        for name, ref in refs.items():
            try:
                wrote, reached = ray.get(ref, timeout=WITHIN)
            except Exception as exc:  # the node could not run it: four not importable there...
                line = (str(exc).strip().splitlines() or [""])[-1]
                checks.append(Check(f"node {name}", "NO-GO", f"a task did not run: {line}",
                                    "install four on every node (or a runtime_env)"))  # fmt: skip
                continue
            checks.append(
                _verdict(f"node {name}", wrote and f"scratch not writable: {wrote}",
                         "scratch writable; records travel to the driver",
                         "give its runs a writable folder (RayPool(scratch=...))")
            )  # fmt: skip
            if endpoint is not None:
                checks.append(
                    _verdict(f"model from {name}", reached and f"cannot reach {reached}",
                             f"{endpoint[0]}:{endpoint[1]} reachable",
                             "open the network from the workers to the model server")
                )  # fmt: skip
        return checks
    finally:
        ray.shutdown()


def _verdict(name: str, problem: str, fine: str, fix: str) -> Check:
    return Check(name, "NO-GO", problem, fix) if problem else Check(name, "GO", fine)
