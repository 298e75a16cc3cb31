"""kernel_env against a real ipykernel: state, syntax, figures, timeouts, containment."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest
from returns.result import Failure, Success

from four import Action, ExecutionError, Observation, Submitted
from four.domains.notebook import KernelEnv, kernel_env
from tests.execute.conftest import alive


def cell(env: KernelEnv, source: str) -> Observation:
    result = env(Action(source))
    assert isinstance(result, Success), result
    seen: Observation = result.unwrap()
    return seen


def test_state_carries_from_cell_to_cell(shared: KernelEnv) -> None:
    assert cell(shared, "answer_1 = 41").returncode == 0
    seen = cell(shared, "answer_1 + 1")
    assert "[result]\n42" in seen.content and seen.returncode == 0
    printed = cell(shared, "import sys\nprint('to out')\nprint('to err', file=sys.stderr)")
    assert "[stdout]\nto out" in printed.content and "[stderr]\nto err" in printed.content


def test_a_syntax_error_is_an_observation_and_the_cell_never_runs(
    shared: KernelEnv, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    seen = cell(shared, f"open({str(marker)!r}, 'w').close()\nx = (1,\n")
    assert seen.returncode == 1
    assert "was not run: SyntaxError: '(' was never closed" in seen.content
    assert not marker.exists()
    assert shared.cells[-1].metadata["four"]["status"] == "syntax_error"
    assert shared.cells[-1].get("execution_count") is None
    # IPython syntax is not a syntax error
    assert cell(shared, "%time magic_ok = 1").returncode == 0


def test_an_error_shows_its_name_message_and_a_trimmed_traceback(shared: KernelEnv) -> None:
    seen = cell(shared, "def deep(n):\n    return 1 / 0 if n == 0 else deep(n - 1)\ndeep(60)")
    assert seen.returncode == 1
    assert "[error] ZeroDivisionError: division by zero" in seen.content
    assert "\x1b[" not in seen.content  # no colour codes
    assert "lines of the traceback elided" in seen.content
    assert seen.content.count("\n") < 40


def test_a_figure_is_a_line_and_its_png_is_kept(shared: KernelEnv) -> None:
    seen = cell(
        shared,
        "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=100)\n"
        "plt.plot([1, 3, 2])\nplt.show()",
    )
    import base64
    import io

    from PIL import Image

    outputs = shared.cells[-1].outputs
    pngs = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == 1
    image = Image.open(io.BytesIO(base64.b64decode(pngs[0])))
    assert image.format == "PNG"
    width, height = image.size
    assert re.search(rf"figure \d+: {width}x{height} PNG", seen.content), seen.content


def test_output_is_bounded_head_and_tail(shared: KernelEnv) -> None:
    seen = cell(shared, "print('start' + 'x' * 2_000_000 + 'end')")
    assert len(seen.content) < 12_000
    assert "start" in seen.content and "end" in seen.content and "elided" in seen.content


def test_an_endless_cell_is_interrupted_and_the_kernel_keeps_its_state(
    shared: KernelEnv,
) -> None:
    cell(shared, "kept_2 = 'still here'")
    pid = shared.pid
    started = time.monotonic()
    seen = cell(shared, "while True: pass")
    assert seen.timed_out and seen.returncode == 124
    assert time.monotonic() - started < 2 + 3  # interrupted, not given up
    assert "interrupted at its timeout" in seen.content
    assert "'still here'" in cell(shared, "kept_2").content
    assert shared.pid == pid and shared.restarts == 0


def test_a_cell_that_ignores_the_interrupt_restarts_the_kernel_and_says_state_was_lost() -> None:
    with kernel_env(timeout=1, interrupt_grace=1) as env:
        cell(env, "lost_3 = 1")
        first = env.pid
        seen = cell(
            env,
            "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "while True: time.sleep(0.05)",
        )
        assert "restarted" in seen.content and "state was lost" in seen.content
        assert seen.timed_out and env.restarts == 1 and env.pid != first
        assert first is not None and not _alive(first)
        assert "NameError" in cell(env, "lost_3").content


def test_the_exit_signal_printed_by_a_cell_submits_the_rest(shared: KernelEnv) -> None:
    result = shared(Action("print('COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT')\nprint('the answer')"))
    assert result == Failure(Submitted("the answer"))


def test_no_process_a_cell_started_outlives_the_run() -> None:
    env = kernel_env(timeout=5)
    seen = cell(
        env,
        "import subprocess\n"
        "a = subprocess.Popen(['sleep', '300.4101'])\n"
        "b = subprocess.Popen(['sleep', '301.4101'], start_new_session=True)\n"  # left the group
        "c = subprocess.Popen(['bash', '-c', '(setsid sleep 302.4101 &)'])\n"  # double fork
        "c.wait(); print(a.pid, b.pid)",
    )
    assert seen.returncode == 0, seen.content
    kernel = env.pid
    started = alive("4101")
    assert kernel is not None and len(started) == 3 and _alive(kernel)
    env.close()
    deadline = time.monotonic() + 5
    while (alive("4101") or _alive(kernel)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive("4101") and not _alive(kernel)
    assert env.pid is None


def test_a_supervisor_interrupt_kills_the_kernel_and_starts_no_other() -> None:
    from four.execute._interrupt import interrupt, interruptible

    env = kernel_env(timeout=60)
    seen: list[Observation] = []
    ready = threading.Event()

    def work() -> None:
        with interruptible("notebook-run"):
            cell(env, "started_4 = True")
            ready.set()
            seen.append(cell(env, "import time\ntime.sleep(60)"))
            seen.append(cell(env, "started_4"))

    thread = threading.Thread(target=work)
    thread.start()
    assert ready.wait(60)
    pid = env.pid
    time.sleep(0.5)
    assert interrupt("notebook-run") == 1
    thread.join(30)
    assert not thread.is_alive()
    assert "stopped" in seen[0].content and "not run" in seen[1].content
    assert pid is not None and not _alive(pid) and env.pid is None and env.restarts == 0
    env.close()


def test_secrets_of_the_driver_do_not_reach_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("MPLBACKEND", "Agg")  # would capture no figure inside the kernel
    with kernel_env(timeout=10) as env:
        seen = cell(
            env, "import os\nprint(os.environ.get('OPENAI_API_KEY'), os.environ.get('MPLBACKEND'))"
        )
        assert "sk-secret" not in seen.content and "Agg" not in seen.content


def test_eight_concurrent_kernels_do_not_cross_talk() -> None:
    results: dict[int, list[str]] = {}
    envs = [kernel_env(timeout=30) for _ in range(8)]

    def work(n: int) -> None:
        env = envs[n]
        cell(env, f"token = {n}")
        results[n] = [cell(env, f"token * 1000 + {i}").content for i in range(3)]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert sorted(results) == list(range(8))
        for n, seen in results.items():
            assert [s.split("[result]\n")[1] for s in seen] == [str(n * 1000 + i) for i in range(3)]
        pids = {env.pid for env in envs}
        assert len(pids) == 8
    finally:
        for env in envs:
            env.close()


def test_the_font_cache_is_built_before_the_first_cell(tmp_path: Path) -> None:
    # A fresh matplotlib config folder: no font cache yet.
    with kernel_env(timeout=30, env={"MPLCONFIGDIR": str(tmp_path)}) as env:
        assert cell(env, "1").returncode == 0  # the first cell does not touch matplotlib
        assert list(tmp_path.glob("fontlist-*.json"))


def test_a_kernel_that_cannot_start_is_an_execution_error() -> None:
    with kernel_env(kernel_name="no-such-kernel") as env:
        result = env(Action("1"))
    assert isinstance(result, Failure) and isinstance(result.failure(), ExecutionError)
    assert "did not start" in result.failure().message and "no-such-kernel" in str(result)


def test_bad_arguments_raise_naming_the_parameter() -> None:
    with pytest.raises(ValueError, match="timeout=0"):
        kernel_env(0)
    with pytest.raises(ValueError, match="max_output=-1"):
        kernel_env(max_output=-1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False
