"""save_notebook, notebook_check and the notebook domain, driven end to end by scripted
models through the real loop, a real kernel and real matplotlib."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from four import run, scripted_invoke
from four.checks import Claim
from four.cli import main
from four.domains import DomainSetup, get_domain
from four.domains.notebook import cell_parse, kernel_env, notebook_check, save_notebook
from four.quaternary import Verdict
from four.trajectory import load_trajectory
from tests._server import LoopbackServer, chat
from tests.execute.conftest import alive

if TYPE_CHECKING:
    from nbformat import NotebookNode

DONE = "The chart shows the squares.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
PLOT = (
    "Squares, and their chart.\n```python\nimport matplotlib.pyplot as plt\n"
    "squares = [n * n for n in range(5)]\nplt.plot(squares)\nplt.title('squares')\nplt.show()\n```"
)
BROKEN = "```python\nhelper = 10\nraise ValueError('oops')\n```"
USES_HIDDEN = "```python\nprint(helper + 1)\n```"


def notebook_of(path: Path) -> NotebookNode:
    """The run's notebook, read back with nbformat and validated."""
    import nbformat

    nb: NotebookNode = nbformat.read(  # type: ignore[no-untyped-call]
        path.with_suffix(".ipynb"), as_version=4
    )
    nbformat.validate(nb)
    return nb


def test_a_figure_is_embedded_as_png_in_a_valid_notebook_beside_the_trajectory(
    tmp_path: Path,
) -> None:
    env = kernel_env(timeout=30, cwd=str(tmp_path))
    script = scripted_invoke([PLOT, BROKEN, DONE])
    path = run(script, cell_parse(), env, save_notebook(tmp_path / "runs", env), prompt="plot")
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "exit:task_complete"
    nb = notebook_of(path)
    assert all(cell.get("id") for cell in nb.cells)
    assert [c.cell_type for c in nb.cells] == ["markdown", "code"]  # the failed cell dropped
    png = next(o for o in nb.cells[1].outputs if "image/png" in o.get("data", {}))
    assert base64.b64decode(png["data"]["image/png"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert trajectory.stats.notebook == {
        "path": path.with_suffix(".ipynb").name,
        "cells": 2,
        "code_cells": 1,
        "figures": 1,
    }
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert env.pid is None  # the run closed the kernel


@pytest.mark.parametrize(("keep", "cells"), [("mark", 3), ("keep", 3)])
def test_failed_cells_can_be_kept_marked_or_as_they_are(
    tmp_path: Path, keep: str, cells: int
) -> None:
    env = kernel_env(timeout=30)
    emit = save_notebook(tmp_path, env, keep_failed=keep)  # type: ignore[arg-type]
    path = run(scripted_invoke([PLOT, BROKEN, DONE]), cell_parse(), env, emit, prompt="p")
    nb = notebook_of(path)
    assert len(nb.cells) == cells
    failed = nb.cells[2]
    assert failed.metadata["four"]["status"] == "error"
    assert ("raises-exception" in failed.metadata.get("tags", [])) == (keep == "mark")


def test_the_check_refuses_a_notebook_that_only_worked_through_hidden_state(
    tmp_path: Path,
) -> None:
    env = kernel_env(timeout=30)
    script = scripted_invoke([BROKEN, USES_HIDDEN, DONE, DONE, DONE, DONE])
    path = run(
        script,
        cell_parse(),
        env,
        save_notebook(tmp_path, env),
        prompt="p",
        check=notebook_check(env),
    )
    trajectory = load_trajectory(path)
    assert (trajectory.outcome or "").startswith("held"), trajectory.outcome
    feedback = [m.content for m in trajectory.messages if getattr(m, "kind", "") == "feedback"]
    assert "code cell 1 (print(helper + 1)) fails: NameError" in feedback[0]


def test_the_check_accepts_a_notebook_that_reproduces_with_its_figures_and_assertion(
    tmp_path: Path,
) -> None:
    env = kernel_env(timeout=30)
    check = notebook_check(env, min_figures=1, assertion="assert squares[-1] == 16")
    path = run(
        scripted_invoke([PLOT, DONE]),
        cell_parse(),
        env,
        save_notebook(tmp_path, env),
        prompt="p",
        check=check,
    )
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "accepted"
    # the same notebook, judged by stricter checks (each re-runs it in a fresh kernel)
    claim = Claim("", tuple(trajectory.messages), env)
    refused = notebook_check(env, min_figures=2)(claim)
    assert refused.verdict == Verdict.NO
    assert refused.reason == "the notebook makes 1 figures; at least 2 wanted"


def test_the_assertion_cell_can_refuse(tmp_path: Path) -> None:
    env = kernel_env(timeout=30)
    run(
        scripted_invoke([USES_HIDDEN.replace("helper", "7"), DONE]),
        cell_parse(),
        env,
        save_notebook(tmp_path, env),
        prompt="p",
    )
    claim = Claim("", (), env)
    refused = notebook_check(env, assertion="assert False, 'not yet'")(claim)
    assert refused.verdict == Verdict.NO
    assert (
        refused.reason
        == "the check's assertion cell fails after the notebook: AssertionError: not yet"
    )


def test_the_notebook_domain_end_to_end_with_a_scripted_model(tmp_path: Path) -> None:
    domain = get_domain("notebook")
    where = DomainSetup(workspace=tmp_path, output_dir=tmp_path / "runs", command_timeout=30)
    env = domain.environment(where)
    (tmp_path / "data.csv").write_text("x,y\n1,2\n3,4\n")
    reply = "```python\nimport csv\nrows = list(csv.DictReader(open('data.csv')))\nlen(rows)\n```"
    path = run(
        scripted_invoke([reply, DONE]),
        domain.parse(),
        env,
        domain.emit(where, env),
        domain.system,
        "count the rows of data.csv",
        check=domain.check(where, env, "assert len(rows) == 2"),
    )
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "accepted"
    assert "[result]\n2" in trajectory.messages[3].content
    assert path.with_suffix(".ipynb").exists()


def test_four_run_domain_notebook_then_show_and_view_name_and_embed_the_figures(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    server.push(chat(PLOT), chat(DONE))
    argv = ["run", "plot squares", "--domain", "notebook", "--model", "m"]
    argv += ["--api-base", server.url, "-o", str(tmp_path / "runs"), "--cwd", str(work), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["outcome"] == "accepted"
    messages = server.bodies("/v1/chat/completions")[0]["messages"]
    assert isinstance(messages, list) and isinstance(messages[0], dict)
    assert messages[0]["content"] == get_domain("notebook").system
    path = Path(result["path"])
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert f"{path.with_suffix('.ipynb').name} · 2 cells · 1 figures: figure 1 (cell 2)" in shown
    assert "figure 1: in the notebook, cell 2" in shown
    page = tmp_path / "run.html"
    assert main(["view", str(path), "-o", str(page)]) == 0
    assert capsys.readouterr().out.strip() == str(page)
    html = page.read_text()
    assert html.count('src="data:image/png;base64,iVBORw0KGgo') == 1
    assert "figure 1 · notebook cell 2" in html
    # the model turns again, in the run's own domain: a fresh kernel gives the same cells
    assert main(["replay", str(path), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["same"] is True and replayed["replayed_outcome"] == "accepted"


CTRL_C = r"""
import json, os, signal, sys, threading, time
from four import run, scripted_invoke
from four.domains.notebook import cell_parse, kernel_env, save_notebook
env = kernel_env(timeout=60)
def later():
    while env.pid is None or not os.path.exists(sys.argv[2]):
        time.sleep(0.05)
    print(env.pid, open(sys.argv[2]).read(), flush=True)
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=later, daemon=True).start()
cell = ("```python\nimport subprocess, time\np = subprocess.Popen(['sleep', '300.5303'])\n"
        f"open({sys.argv[2]!r}, 'w').write(str(p.pid))\ntime.sleep(60)\n```")
try:
    emit = save_notebook(sys.argv[1], env, keep_failed="keep")
    run(scripted_invoke([cell]), cell_parse(), env, emit, prompt="p")
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_in_a_cell_leaves_no_process_and_saves_the_notebook(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    out = subprocess.run(
        [sys.executable, "-c", CTRL_C, str(tmp_path), str(tmp_path / "pid")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    kernel, _, said = out.stdout.split()  # the sleeper's pid is its namespace's
    assert said == "interrupted" and out.stderr == ""  # nothing left for asyncio to report
    deadline = time.monotonic() + 5
    while (Path(f"/proc/{kernel}").exists() or alive("300.5303")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{kernel}").exists() and not alive("300.5303")
    (saved,) = tmp_path.glob("*.json")
    assert load_trajectory(saved).outcome == "interrupted: KeyboardInterrupt"
    assert notebook_of(saved).cells[0].metadata["four"]["status"] == "lost"


def test_the_notebook_domain_refuses_a_persistent_shell_and_tool_calls(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "x", "--domain", "notebook", "--model", "m", "--api-base", server.url]
    assert main([*argv, "--env", "persistent", "-o", str(tmp_path)]) == 2
    assert "runs in --env local, sandbox or docker" in capsys.readouterr().err
    assert main([*argv, "--toolcalls", "-o", str(tmp_path)]) == 2
    assert "--toolcalls is for the bash domain" in capsys.readouterr().err
