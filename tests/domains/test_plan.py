"""``four plan``: the plan domain end to end with scripted models, real checks in real
environments, the launch run by ``four batch`` and audited, and bad missions.

Every plan below is validated for real: its checks run in bash (and bubblewrap) on a
copy of a real workspace, its commands are linted against the real tools.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from returns.result import Result, Success

from four import Assistant, FormatError, Message, ModelError, Reply
from four.checks import audit
from four.cli import main
from four.domains.plan import Launch, compile_launch, plan_parse, read_launch, run_check
from four.domains.plan._plan import PlanTask
from four.invoke import scripted_invoke
from tests._server import Answer, Request, chat, serve

MODELS = Answer({"object": "list", "data": [{"id": "test-model", "object": "model"}]})
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

GREET = {
    "id": "greet",
    "task": "Write greet.sh, a shell script that prints hello.",
    "check": 'test "$(bash greet.sh)" = hello',
    "why": "it runs the script and compares what it prints",
}
ALREADY = {**GREET, "check": "test -f notes.txt", "why": "the file is there"}


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("a workspace with one file\n")
    return work


def plan(*tasks: Mapping[str, object], **more: object) -> str:
    return "```json\n" + json.dumps({"tasks": list(tasks), **more}, indent=1) + "\n```"


def launch_in(tmp_path: Path, workspace: Path, **settings: object) -> Launch:
    return Launch(tmp_path / "launch", workspace, window=8192, **settings)  # type: ignore[arg-type]


class Recorder:
    """A G of scripted plans that keeps what it was told before each."""

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.told: list[str] = []

    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        self.told.append(messages[-1].content)
        return Success(Assistant(self.replies.pop(0)))


def test_a_check_that_already_passes_is_sent_back_and_the_fixed_plan_is_launched(
    tmp_path: Path, workspace: Path
) -> None:
    G = Recorder([plan(ALREADY), plan(GREET)])
    made = compile_launch("A greeting script.", G, launch_in(tmp_path, workspace))
    assert made.valid and made.outcome == "accepted"
    (rejection,) = made.rejected
    assert rejection.task == "greet" and rejection.attempt == 1
    assert "already passes on the starting workspace" in rejection.reason
    assert "already passes on the starting workspace" in G.told[1]  # told back, like a format error
    folder = made.folder
    (item,) = [json.loads(line) for line in (folder / "tasks.jsonl").read_text().splitlines()]
    assert item == {**{k: GREET[k] for k in ("id", "task", "check")}, "domain": "bash",
                    "cwd": str(workspace)}  # fmt: skip
    text = (folder / "PLAN.md").read_text()
    assert "Why it proves the task done: it runs the script and compares what it prints" in text
    assert "Plan 1:\n\n- task greet: the check already passes" in text
    assert "- model calls: at most 30" in text and "- tokens: at most 245,760" in text
    assert audit(made.trajectory).valid
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]  # checks ran on a copy


def test_a_flaky_check_is_rejected(tmp_path: Path, workspace: Path) -> None:
    state = tmp_path / "flips"  # outside the workspace: each run of the check flips it
    flaky = {
        **GREET,
        "check": f"if [ -e {state} ]; then rm {state}; exit 0; fi; touch {state}; exit 1",
    }
    G = scripted_invoke([plan(flaky), plan(GREET)])
    made = compile_launch("A greeting script.", G, launch_in(tmp_path, workspace))
    assert made.valid
    (rejection,) = made.rejected
    assert rejection.reason.startswith("the check is flaky: run twice on the same starting "
                                       "workspace it said fail (")  # fmt: skip
    assert rejection.reason.endswith("then pass; make it deterministic")


def test_a_plan_naming_an_unknown_flag_is_rejected_by_lint(tmp_path: Path, workspace: Path) -> None:
    bad = {**GREET, "task": "Write greet.sh; test it with `bash --bogus-flag greet.sh`.",
           "check": 'grep --quiett hello greet.sh && test "$(bash greet.sh)" = hello'}  # fmt: skip
    made = compile_launch("x", scripted_invoke([plan(bad)]), launch_in(tmp_path, workspace))
    assert not made.valid and made.plan is None
    reasons = sorted(r.reason for r in made.rejected)
    assert reasons[0].startswith(
        "the check does not pass four lint: `grep` has no option `--quiett` (nearest: --quiet"
    )
    assert reasons[1].startswith(
        "the task does not pass four lint: `bash` has no option `--bogus-flag`"
    )
    assert not (made.folder / "tasks.jsonl").exists()  # no launch, and PLAN.md says why
    assert "# No launch" in (made.folder / "PLAN.md").read_text()


def test_ids_domains_and_a_check_that_never_ends_are_told_back(
    tmp_path: Path, workspace: Path
) -> None:
    slow = {**GREET, "id": "slow", "check": "sleep 30"}
    tasks = [GREET, {**GREET, "task": "again"}, {**GREET, "id": "a/b"},
             {**GREET, "id": "nb", "domain": "notebook"}, {**GREET, "id": "x", "domain": "cobol"}, slow]  # fmt: skip
    made = compile_launch("x", scripted_invoke([plan(*tasks)]),
                          launch_in(tmp_path, workspace, check_timeout=1))  # fmt: skip
    said = {(r.task, r.reason.split(":")[0]) for r in made.rejected}
    assert ("greet", "the id is used by another task") in said
    assert ("a/b", "the id must be letters, digits, '.', '_' or '-' (it names a folder)") in said
    assert ("nb", "domain 'notebook'") in said and ("x", "domain 'cobol'") in said
    assert (
        "slow",
        "the check could not be judged on the starting workspace (it did not finish in time)",
    ) in said


def test_held_out_files_the_agents_could_read_are_refused(tmp_path: Path, workspace: Path) -> None:
    hidden = {**GREET, "check": "bash hidden/judge.sh",
              "held_out": {"hidden/judge.sh": 'test "$(bash greet.sh)" = hello'}}  # fmt: skip
    made = compile_launch("x", scripted_invoke([plan(hidden)]), launch_in(tmp_path, workspace))
    (rejection,) = made.rejected
    assert rejection.reason.startswith(
        "the agents' commands (--env local) can read the launch folder"
    )


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_held_out_files_are_launched_where_the_sandbox_hides_them(
    tmp_path: Path, workspace: Path
) -> None:
    hidden = {**GREET, "check": "bash hidden/judge.sh",
              "held_out": {"hidden/judge.sh": 'test "$(bash greet.sh)" = hello\n'}}  # fmt: skip
    launch = launch_in(tmp_path, workspace, env="sandbox")
    made = compile_launch("x", scripted_invoke([plan(hidden)]), launch)
    assert made.valid, made.rejected
    (item,) = [json.loads(line) for line in (made.folder / "tasks.jsonl").read_text().splitlines()]
    assert item["check_files"] == ["hidden=held_out/greet/hidden"]
    assert (made.folder / "held_out/greet/hidden/judge.sh").read_text().startswith("test ")
    task = PlanTask("t", "t", "bash hidden/judge.sh", "w", held_out={"hidden/judge.sh": "exit 0"})
    assert run_check(task, launch, times=1)[0].passed  # the files are there while it runs


def test_an_edited_launch_fails_audit_until_checked_again(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = compile_launch("x", scripted_invoke([plan(GREET)]), launch_in(tmp_path, workspace))
    folder = str(made.folder)
    assert main(["audit", folder]) == 0
    toml = made.folder / "four.toml"
    toml.write_text(toml.read_text().replace("max-steps = 30", "max-steps = 12"))
    assert main(["audit", folder]) == 1
    assert "the artifact four.toml was changed after the run sealed it" in capsys.readouterr().out
    (made.folder / "held_out").mkdir()
    (made.folder / "held_out" / "extra.sh").write_text("exit 0")
    assert main(["audit", folder]) == 1
    assert "held_out/extra.sh was added after the launch was sealed" in capsys.readouterr().out
    shutil.rmtree(made.folder / "held_out")
    assert main(["plan", "--check", folder]) == 0
    assert main(["audit", folder]) == 0
    assert read_launch(folder)[1].max_steps == 12
    capsys.readouterr()
    # an edit that breaks the launch: --check refuses it and leaves the folder as it is
    tasks = made.folder / "tasks.jsonl"
    tasks.write_text(
        tasks.read_text().replace('greet.sh)\\" = hello', 'greet.sh)\\" = hello || true')
    )
    before = tasks.read_text()
    assert main(["plan", "--check", folder]) == 1
    out = capsys.readouterr()
    assert "already passes on the starting workspace" in out.err
    assert tasks.read_text() == before and main(["audit", folder]) == 1


def _agent(request: Request) -> Answer:
    """The agents' model: writes greet.sh, then submits."""
    body = request.json()
    messages = body.get("messages")
    done = (
        sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        if isinstance(messages, list)
        else 0
    )
    if done == 0:
        return chat("```bash\nprintf 'echo hello\\n' > greet.sh\n```")
    return chat(f"```bash\necho {SUBMIT}\n```")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_launch_runs_under_four_batch_as_it_is_and_is_audited(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = compile_launch("x", scripted_invoke([plan(GREET)]), launch_in(tmp_path, workspace))
    toml = made.folder / "four.toml"
    with serve(default=_agent, routes={"/v1/models": MODELS}) as server:
        toml.write_text(toml.read_text() + f'model = "test-model"\napi-base = "{server.url}"\n'
                        'prices = "0,0"\n')  # fmt: skip
        assert main(["plan", "--check", str(made.folder)]) == 0  # edited: validated again
        capsys.readouterr()
        tasks = str(made.folder / "tasks.jsonl")
        assert main(["doctor", "batch", tasks, "--json"]) in (0, 3)  # four.toml read too
        rows = {c["check"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
        assert rows["prompt"]["status"] == rows["environment"]["status"] == "GO"
        assert rows["endpoint"]["status"] == "GO"  # the api-base of four.toml
        out = tmp_path / "out"
        code = main(["batch", str(made.folder / "tasks.jsonl"), "-o", str(out), "--json"])
        assert code == 0, capsys.readouterr()
    assert json.loads(capsys.readouterr().out)["outcomes"] == {"accepted": 1}
    manifest = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [m["outcome"] for m in manifest] == ["accepted"]
    assert main(["audit", str(out)]) == 0 and main(["audit", str(made.folder)]) == 0
    assert (workspace / "greet.sh").read_text() == "echo hello\n"


def test_four_batch_refuses_a_settings_file_it_does_not_understand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tasks.jsonl").write_text('{"id": "a", "task": "t"}\n')
    (tmp_path / "four.toml").write_text("max-stpes = 3\n")
    assert main(["batch", str(tmp_path / "tasks.jsonl"), "-m", "m"]) == 2
    err = capsys.readouterr().err
    assert err == (f"four batch: error: {tmp_path / 'four.toml'}: 'max-stpes' is no setting of "
                   "four batch (did you mean max-steps?)\n")  # fmt: skip
    (tmp_path / "four.toml").write_text('env = "moon"\n')
    assert main(["batch", str(tmp_path / "tasks.jsonl"), "-m", "m"]) == 2
    assert "env = 'moon': use one of local, persistent, sandbox, docker" in capsys.readouterr().err
    (tmp_path / "four.toml").write_text("")
    (tmp_path / "tasks.jsonl").write_text('{"id": "a", "task": "t", "domain": "cobol"}\n')
    assert (
        main(
            [
                "batch",
                str(tmp_path / "tasks.jsonl"),
                "-m",
                "m",
                "--api-base",
                "http://127.0.0.1:9/v1",
            ]
        )
        == 2
    )
    assert "item 'a': unknown domain 'cobol'" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_four_plan_from_the_terminal(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    launch = tmp_path / "launch"
    with serve(chat(plan(ALREADY)), chat(plan(GREET)), routes={"/v1/models": MODELS}) as server:
        words = ["plan", "A greeting script.", "-o", str(launch), "--cwd", str(workspace),
                 "-m", "test-model", "--api-base", server.url]  # fmt: skip
        assert main(words) == 0
        out = capsys.readouterr()
        assert (
            out.out == f"valid launch · 1 task · {launch} · four batch {launch / 'tasks.jsonl'}\n"
        )
        assert out.err.startswith("plan 1 rejected:\n  - task greet: the check already passes")
        told = json.dumps(server.bodies("/v1/chat/completions")[0]["messages"])
        assert "Mission: A greeting script." in told and "notes.txt" in told
        assert main(words) == 2  # the folder holds a launch now
        assert "already holds a launch" in capsys.readouterr().err
        inner = ["plan", "x", "-o", str(workspace / "launch"), "--cwd", str(workspace), "-m", "m"]
        assert main(inner) == 2
        assert "is inside the agents' workspace" in capsys.readouterr().err
    assert (launch / "four.toml").read_text().count('model = "openai/test-model"') == 1
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert main(["lint", str(launch / "PLAN.md"), "--tool", "four"]) == 0  # its command lines


@pytest.mark.parametrize(
    ("given", "stdin", "said"),
    [
        ("   ", b"", "the mission is empty: say what the launch is for"),
        (
            "-",
            b"x" * (10 << 20),
            "the mission is longer than 64 KiB: say what the launch is for in a few paragraphs",
        ),
        (
            "-",
            b"\x00\x01binary",
            "the mission: a binary file (a NUL byte at offset 0), not a prompt",
        ),
    ],
)
def test_a_bad_mission_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    given: str, stdin: bytes, said: str,
) -> None:  # fmt: skip
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    assert main(["plan", given, "-o", str(tmp_path / "l"), "-m", "m"]) == 2
    assert capsys.readouterr().err == f"four plan: error: {said}\n"
    assert not (tmp_path / "l").exists()


@pytest.mark.parametrize(
    ("words", "variables", "said"),
    [
        (["--env", "docker"], {}, "--env docker needs an image: --image NAME or FOUR_IMAGE"),
        (
            [],
            {"FOUR_ENV": "moon"},
            "FOUR_ENV='moon': use one of local, persistent, sandbox, docker",
        ),
        (["--api-base", "http://127.0.0.1:9"], {}, "no model: give --model NAME or set FOUR_MODEL"),
    ],
)
def test_four_plan_reads_the_model_and_environment_as_four_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    words: list[str], variables: dict[str, str], said: str,
) -> None:  # fmt: skip
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    model = [] if "--api-base" in words else ["-m", "m"]
    assert main(["plan", "x", "-o", str(tmp_path / "l"), *model, *words]) == 2
    assert capsys.readouterr().err == f"four plan: error: {said}\n"
    run = ["run", "x", "-o", str(tmp_path / "runs"), *model, *words]
    assert main(run) == 2 and capsys.readouterr().err == f"four run: error: {said}\n"
    if not said.startswith("no model"):  # four lint reads the environment the same way
        assert main(["lint", "--domain", "bash", *words]) == 2
        assert capsys.readouterr().err == f"four lint: error: {said}\n"


def feedback(reply: str) -> str:
    """What V1 tells the model of ``reply`` (it must be a format error)."""
    said = plan_parse()(Assistant(reply)).failure()
    assert isinstance(said, FormatError)
    return said.feedback


def test_v1_never_takes_the_models_word_for_a_plan() -> None:
    said = feedback(SUBMIT)
    assert said.startswith("no plan found") and "(a plan is done when it validates" in said
    assert "not valid JSON" in feedback('```json\n{"tasks": [\n```')
    incomplete = plan({"id": "a", "task": "t", "why": "w"})
    assert "tasks[0].check must be a non-empty string" in feedback(incomplete)


def test_four_toml_fills_only_the_flags_not_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from four.cli._batch import flags as batch_flags
    from four.cli._launchfile import apply_settings
    from tests.batch._agents import batch_args

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "task": "t"}\n')
    (tmp_path / "four.toml").write_text(
        'max-steps = 30\nsystem = "system.md"\nenv = "sandbox"\ntoolcalls = false\n'
    )
    monkeypatch.setenv("FOUR_ENV", "docker")  # a variable: the file wins over it
    args = batch_args(str(tasks), "--max-steps", "5")
    assert apply_settings(args, tasks, batch_flags) == tmp_path / "four.toml"
    assert (args.max_steps, args.env, args.toolcalls) == (5, "sandbox", False)
    assert args.system == str(tmp_path / "system.md")  # relative to the file's folder
    elsewhere = batch_args(str(tmp_path / "elsewhere.jsonl"))
    assert apply_settings(elsewhere, tmp_path / "x" / "t", batch_flags) is None


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_held_out_folders_replace_the_workspaces_as_four_batch_puts_them(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "tests").mkdir()
    (workspace / "tests" / "visible.sh").write_text("exit 0\n")
    launch = launch_in(tmp_path, workspace, env="sandbox")
    # four batch puts tests/ in place whole: the workspace's tests/visible.sh is not there
    task = PlanTask("t", "t", "test ! -e tests/visible.sh && test -e tests/hidden.sh", "w",
                    held_out={"tests/hidden.sh": "exit 0\n"})  # fmt: skip
    assert run_check(task, launch)[0].passed
    alone = {**GREET, "check": "bash judge.sh", "held_out": {"judge.sh": "exit 1"}}
    made = compile_launch("x", scripted_invoke([plan(alone)]), launch)
    assert [r.reason for r in made.rejected] == [
        "held-out file 'judge.sh': put it in a folder of its own, e.g. hidden/judge.sh "
        "(held-out files replace whole folders)"
    ]
