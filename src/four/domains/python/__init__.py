"""The Python-code domain: file edits judged by ruff, mypy and the tests.

    V1    edit_parse()          whole files, SEARCH/REPLACE blocks, ```bash commands
    V2    python_env(dir)       edits applied in the workspace, then ruff and mypy (dmypy)
    emit  save_files(dir, env)  the trajectory, the changed .py files and a unified diff
    check typed_check(tests)    YES when mypy --strict and ruff are clean and the tests pass

Needs the ``four-loop[python]`` extra (ruff and mypy).
"""

import importlib.util

if importlib.util.find_spec("mypy") is None or importlib.util.find_spec("ruff") is None:
    raise ImportError("the python domain needs mypy and ruff", name="mypy")

from four.domains.python._check import TypedCheck, typed_check
from four.domains.python._diagnostics import Diagnostic
from four.domains.python._domain import DOMAIN, SYSTEM
from four.domains.python._emit import ChangedFiles, save_files
from four.domains.python._env import PythonEnv, python_env

__all__ = [
    "DOMAIN",
    "SYSTEM",
    "ChangedFiles",
    "Diagnostic",
    "PythonEnv",
    "TypedCheck",
    "python_env",
    "save_files",
    "typed_check",
]
