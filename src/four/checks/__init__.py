"""The verified loop: deterministic checks judge every claim of completion.

run(G, V1, V2, emit, system, prompt, check=command_check("pytest -q"))
"""

from four.checks._audit import Audit, audit
from four.checks._checks import AllOf, CommandCheck, FileCheck, all_of, command_check, file_check
from four.checks._claim import Check, Claim, Gatherer, Resolver
from four.checks._config import config_from_json, config_to_json
from four.checks._judge import Judgement, Verifier, verify

__all__ = [
    "AllOf",
    "Audit",
    "Check",
    "Claim",
    "CommandCheck",
    "FileCheck",
    "Gatherer",
    "Judgement",
    "Resolver",
    "Verifier",
    "all_of",
    "audit",
    "command_check",
    "config_from_json",
    "config_to_json",
    "file_check",
    "verify",
]
