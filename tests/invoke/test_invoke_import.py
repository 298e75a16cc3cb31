"""litellm is imported at the first call, never at import, and offline by default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _python(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    clean["PYTHONPATH"] = SRC
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_four_does_not_import_litellm() -> None:
    out = _python(
        "import sys, four, four.invoke\n"
        "from four.invoke import litellm_invoke, retry_invoke\n"
        "G = litellm_invoke('openai/m')\n"
        "print(sorted(m for m in ('litellm', 'openai', 'httpx') if m in sys.modules))"
    )
    assert out == "[]"


def test_first_call_imports_litellm_with_the_local_price_map() -> None:
    """The first call sets LITELLM_LOCAL_MODEL_COST_MAP (no network at import)."""
    out = _python(
        "import os, sys\n"
        "from four.invoke import litellm_invoke\n"
        "from four import User\n"
        "reply = litellm_invoke('openai/m', mock_response='hi')([User('q')]).unwrap()\n"
        "print(reply.content, os.environ['LITELLM_LOCAL_MODEL_COST_MAP'], 'litellm' in sys.modules)"
    )
    assert out == "hi True True"
