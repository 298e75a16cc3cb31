"""The verified loop: deterministic checks judge every claim of completion.

run(G, V1, V2, emit, system, prompt, check=command_check("pytest -q"))
"""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # the names, each once (loaded on first use)
    from four.checks._audit import Audit as Audit
    from four.checks._audit import audit as audit
    from four.checks._checks import AllOf as AllOf
    from four.checks._checks import CommandCheck as CommandCheck
    from four.checks._checks import FileCheck as FileCheck
    from four.checks._checks import all_of as all_of
    from four.checks._checks import command_check as command_check
    from four.checks._checks import file_check as file_check
    from four.checks._claim import Check as Check
    from four.checks._claim import Claim as Claim
    from four.checks._claim import Gatherer as Gatherer
    from four.checks._claim import Resolver as Resolver
    from four.checks._feedback import DEFAULT_FEEDBACK as DEFAULT_FEEDBACK
    from four.checks._feedback import FEEDBACK_LEVELS as FEEDBACK_LEVELS
    from four.checks._feedback import FeedbackLevel as FeedbackLevel
    from four.checks._feedback import rejection as rejection
    from four.checks._held_out import HeldOutFiles as HeldOutFiles
    from four.checks._held_out import held_out_files as held_out_files
    from four.checks._judge import Judgement as Judgement
    from four.checks._judge import Verifier as Verifier
    from four.checks._judge import config_from_json as config_from_json
    from four.checks._judge import config_to_json as config_to_json
    from four.checks._judge import verify as verify

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
