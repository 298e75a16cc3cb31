"""The command-line-tool domain: sources compiled, the binary run sandboxed, a man page.

    V1    edit_parse()            sources headed by their path, SEARCH/REPLACE, ```bash
    V2    build_env(dir)          edits written; gcc -Werror, go build + go vet, or cargo,
                                  diagnostics with file, line and source; --help,
                                  --version, man page, smoke: sandboxed
    emit  save_tool(dir, env)     the trajectory, and the tool: bin/, man/man1/, src/
    check tool_check(acceptance)  YES when built clean, documented, and the command passes

Needs gcc (or go, or cargo), help2man and mandoc (or groff), and bubblewrap for the
sandbox. ``four run --domain cli`` writes C; ``--domain cli-go`` Go; ``cli-rust`` Rust.
"""

from four.domains.cli._build import Build, Diagnostic, Language, build
from four.domains.cli._check import ToolCheck, tool_check
from four.domains.cli._domain import DOMAIN, GO_DOMAIN, RUST_DOMAIN, SYSTEM, system
from four.domains.cli._emit import BuiltTool, save_tool
from four.domains.cli._env import Checked, Probe, ToolEnv, build_env, tool_name

__all__ = [
    "DOMAIN",
    "GO_DOMAIN",
    "RUST_DOMAIN",
    "SYSTEM",
    "Build",
    "BuiltTool",
    "Checked",
    "Diagnostic",
    "Language",
    "Probe",
    "ToolCheck",
    "ToolEnv",
    "build",
    "build_env",
    "save_tool",
    "system",
    "tool_check",
    "tool_name",
]
