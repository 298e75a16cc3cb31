"""Held-out files: present while the check runs, nowhere the agent's commands can look.

Against the real thing: bash on this machine, bubblewrap, and a Docker container."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from four import (
    Action,
    Message,
    User,
    audit,
    load_trajectory,
    run,
    save_trajectory,
    scripted_invoke,
)
from four._types import Execute
from four.checks import Claim, command_check, held_out_files
from four.checks._held_out import isolated
from four.execute import (
    DockerEnv,
    Limits,
    LocalEnv,
    SandboxEnv,
    ShellEnv,
    docker_env,
    local_env,
    sandbox_env,
)
from four.parse import regex_parse
from four.quaternary import Verdict
from tests.checks._verdicts import log_of
from tests.execute.conftest import TEST_IMAGE, bwrap_problem, docker_problem, need

MARKER = "held-out-marker-" + os.urandom(6).hex()
NAME = f"test_answer_{os.urandom(3).hex()}"  # this session's: older sessions' stay apart
HIDDEN = f'# {MARKER}\ntouch check-was-here\ntest "$(cat result.txt)" = 42\n'
SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ncat result.txt\n```"


def search(roots: str, grep_roots: str) -> str:
    """The agent's look for the hidden test: by name over ``roots``, by content over
    ``grep_roots``, by path."""
    half = len(MARKER) // 2  # the marker split, so no process's arguments hold it whole
    return (
        "```bash\n"
        f"echo FIND; find {roots} -name '{NAME}*' 2>/dev/null; "
        f"find {roots} -maxdepth 3 -name 'four-check-*' 2>/dev/null; "
        f'echo GREP; grep -rl --exclude-dir=proc --exclude-dir=sys "{MARKER[:half]}""{MARKER[half:]}" '
        f"{grep_roots} 2>/dev/null; "
        "echo WATCHED; grep -h test_answer_ .watch.log 2>/dev/null; "
        "echo TICKS; grep -c tick .watch.log 2>/dev/null; "
        f"echo CAT; cat tests_hidden/{NAME}.sh 2>&1 | head -1; ls tests_hidden 2>&1; echo END\n"
        "```"
    )


# Started before the submission: a process that outlives the agent's command and keeps
# looking while the check runs (bubblewrap ends it with the command; in Docker it lives on
# in the agent's container, and the check runs in another).
WATCHER = (
    "```bash\necho 41 > result.txt\n"
    "setsid nohup bash -c 'while :; do "
    'find / -maxdepth 4 -name "test_answer*" -not -path "/proc/*"; echo tick; sleep 0.1; '
    "done' > .watch.log 2>/dev/null &\n```"
)


def observations(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if getattr(m, "kind", "") == "observation"]


@pytest.fixture
def hidden(tmp_path: Path) -> Iterator[Path]:
    """The held-out test's folder on the host; removed after the test, so the next
    test's search of /tmp finds nothing of this one's."""
    source = tmp_path / "hidden"
    source.mkdir()
    (source / f"{NAME}.sh").write_text(HIDDEN)
    yield source
    shutil.rmtree(source, ignore_errors=True)


def agent_run(
    tmp_path: Path,
    env: Execute,
    check: object,
    roots: str,
    grep_roots: str = '"$PWD" /tmp "$HOME"',
    *,
    watch: bool = True,
) -> str:
    """The agent's run, judged accepted; what its search printed."""
    model = scripted_invoke(
        [
            WATCHER if watch else "```bash\necho 41 > result.txt\n```",
            SUBMIT,
            search(roots, grep_roots),
            "```bash\necho 42 > result.txt\n```",
            SUBMIT,
        ]
    )
    path = run(
        model,
        regex_parse(),
        env,
        save_trajectory(tmp_path / "runs"),
        "s",
        "Write the answer to result.txt.",
        max_steps=8,
        check=check,  # type: ignore[arg-type]
    )
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "accepted"  # the check saw the hidden test: it ran it
    assert [entry.verdict for entry in log_of(trajectory)] == ["NO", "YES"]
    assert audit(path).valid
    seen = observations(trajectory.messages)
    searched = next(text for text in seen if "FIND" in text)
    found = searched.split("FIND", 1)[1].split("TICKS", 1)[0]
    assert found.replace("GREP", "").replace("WATCHED", "").strip() == "", searched
    assert "No such file or directory" in searched.split("CAT", 1)[1]
    assert all(MARKER not in text for text in seen)
    assert all(MARKER not in m.content for m in trajectory.messages if isinstance(m, User))
    return searched


@pytest.fixture
def scratch_copies() -> Iterator[None]:
    """No copy the checks made is left in the temporary folder."""
    before = set(Path(tempfile.gettempdir()).glob("four-check-*"))
    yield
    assert set(Path(tempfile.gettempdir()).glob("four-check-*")) <= before


def test_local_the_copy_holds_the_files_and_is_gone_after(
    tmp_path: Path, hidden: Path, scratch_copies: None
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    source = hidden
    check = command_check(
        f"bash tests_hidden/{NAME}.sh", files={"tests_hidden/": source}, timeout=30
    )
    (source / f"{NAME}.sh").unlink()  # the check holds the bytes; nothing on disk
    source.rmdir()
    # No watcher here: with local_env the agent runs as you, and a process it leaves
    # behind could look into the copy while the check runs (see command_check).
    agent_run(
        tmp_path, local_env(cwd=str(work)), check, f"/tmp {tmp_path}", f"{tmp_path}", watch=False
    )
    assert not (work / "check-was-here").exists()  # the check's writes stay in its copy
    assert not (work / "tests_hidden").exists()


def test_sandbox_the_whole_filesystem_has_no_trace(
    tmp_path: Path, hidden: Path, scratch_copies: None
) -> None:
    need(bwrap_problem())
    work = tmp_path / "work"
    source = hidden  # kept on the host: the sandbox cannot see it
    check = command_check(
        f"bash tests_hidden/{NAME}.sh", files={"tests_hidden/": source}, timeout=30
    )
    with sandbox_env(30, workdir=str(work)) as env:
        agent_run(tmp_path, env, check, "/")
    assert not (work / "check-was-here").exists() and not (work / "tests_hidden").exists()


def test_docker_a_container_of_the_committed_container_judges(
    tmp_path: Path, hidden: Path, scratch_copies: None
) -> None:
    need(docker_problem())
    source = hidden
    check = command_check(
        f"bash tests_hidden/{NAME}.sh", files={"tests_hidden/": source}, timeout=60
    )
    env = docker_env(TEST_IMAGE, 60, cwd="/work")
    try:
        agent_run(tmp_path, env, check, "/")
        # No watcher outlives its command in a container (four.execute's containment ends
        # a command's background processes with it), and the check runs in another one.
        after = env(Action("ls -a /work")).unwrap().content
        assert "check-was-here" not in after and "tests_hidden" not in after
    finally:
        env.close()


def test_the_agents_own_files_there_are_replaced(tmp_path: Path, hidden: Path) -> None:
    (tmp_path / "tests_hidden").mkdir()
    (tmp_path / "tests_hidden" / "conftest.sh").write_text("planted by the agent")
    files = held_out_files({"tests_hidden/": hidden})
    env = local_env(cwd=str(tmp_path))
    with isolated(env, files, 30) as made:
        listing = made.unwrap()(Action("ls tests_hidden")).unwrap().content
    assert f"{NAME}.sh" in listing and "conftest.sh" not in listing
    assert (tmp_path / "tests_hidden" / "conftest.sh").exists()  # the agent's stay its own


@pytest.mark.parametrize("kind", ["local", "shell", "sandbox", "docker"])
def test_the_checks_copy_runs_under_the_agents_limits(
    tmp_path: Path, hidden: Path, kind: str
) -> None:
    """The check runs the agent's files (its tests import them): under the limits the
    user gave the agent's environment, never the defaults."""
    limits = Limits(processes=64, file_size=1 << 20, memory=1 << 30)
    env: LocalEnv | ShellEnv | SandboxEnv | DockerEnv
    if kind == "sandbox":
        need(bwrap_problem())
        env = sandbox_env(30, workdir=str(tmp_path), limits=limits)
    elif kind == "docker":
        need(docker_problem())
        env = docker_env(TEST_IMAGE, 60, cwd="/work", limits=limits)
    elif kind == "shell":
        env = local_env(cwd=str(tmp_path), limits=limits, persistent=True)
    else:
        env = local_env(cwd=str(tmp_path), limits=limits)
    files = held_out_files({"tests_hidden/": hidden})
    try:
        with isolated(env, files, 60) as made:
            said = made.unwrap()(Action("ulimit -f")).unwrap().content
    finally:
        env.close()
    assert "<output>\n1024\n</output>" in said  # 1 MiB in 1024-byte blocks


def test_bad_held_out_files_are_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be a path inside the workspace"):
        command_check("true", files={"../up/": tmp_path})
    with pytest.raises(ValueError, match="cannot read"):
        command_check("true", files={"t/": tmp_path / "missing"})
    with pytest.raises(ValueError, match="is a folder: end the destination with '/'"):
        command_check("true", files={"t": tmp_path})


def test_an_environment_it_cannot_copy_holds_the_run_with_the_reason(tmp_path: Path) -> None:
    check = command_check("true", files={"expected.txt": b"42"})
    result = check(Claim("", (), lambda action: None))  # type: ignore[arg-type]
    assert result.verdict == Verdict.MAYBE
    assert "held-out files need local_env, shell_env, sandbox_env or docker_env" in str(
        result.needed
    )


def test_a_symlink_the_agent_planted_leads_nowhere(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "tests").symlink_to(outside)  # the agent hopes the files land where it can look
    files = held_out_files({"tests/hidden.sh": b"# held out"})
    with isolated(local_env(cwd=str(work)), files, 30) as made:
        shown = made.unwrap()(Action("cat tests/hidden.sh")).unwrap().content
    assert "# held out" in shown and list(outside.iterdir()) == []


def test_a_fifo_in_the_workspace_does_not_stop_the_judge(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "trap")
    (tmp_path / "result.txt").write_text("42\n")
    check = command_check("cat result.txt", files={"expected.txt": b"42\n"}, timeout=30)
    assert check(Claim("", (), local_env(cwd=str(tmp_path)))).verdict == Verdict.YES


def test_sparse_files_stay_sparse_in_the_checks_copy(tmp_path: Path) -> None:
    """Three 2 GiB files of holes (as `truncate -s 2G` makes them) and one of data, a
    hole and data: the check's copy holds the same bytes and takes no more room."""
    for n in range(3):
        with open(tmp_path / f"big{n}", "wb") as f:
            f.truncate(2 << 30)
    with open(tmp_path / "mixed", "wb") as f:
        f.write(b"head" * 1024)
        f.seek(64 << 20)
        f.write(b"tail" * 1024)
    files = held_out_files({"expected.txt": b"42\n"})
    with isolated(local_env(cwd=str(tmp_path)), files, 60) as made:
        env = made.unwrap()
        shown = env(Action("du -sk . && stat -c '%n %s' big0 big1 big2 mixed")).unwrap()
        digest = env(Action("sha256sum mixed")).unwrap().content
    used_kib = int(shown.content.split("<output>")[1].split()[0])
    assert used_kib < 1024, shown.content  # the holes were not written
    for n in range(3):
        assert f"big{n} {2 << 30}" in shown.content
    assert f"mixed {(64 << 20) + 4096}" in shown.content
    import hashlib

    assert hashlib.sha256((tmp_path / "mixed").read_bytes()).hexdigest() in digest


def test_a_workspace_with_more_data_than_the_copy_may_hold_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("four._sparse.COPY_LIMIT", 1 << 20)
    (tmp_path / "data.bin").write_bytes(os.urandom(2 << 20))
    with isolated(local_env(cwd=str(tmp_path)), held_out_files({"x": b"1"}), 30) as made:
        reason = made.failure()
    assert reason.startswith("cannot make the check's copy of the workspace: the copy passed ")
    assert "1.0 MiB of data at" in reason and "data.bin" in reason and "\n" not in reason


def test_a_held_out_source_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(ValueError, match="is a FIFO"):
        held_out_files({"expected.txt": tmp_path / "fifo"})
    with pytest.raises(ValueError, match="is a character device"):
        held_out_files({"expected.txt": tmp_path / "zero"})
