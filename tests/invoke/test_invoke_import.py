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


def test_first_call_sets_the_local_price_map_before_importing(tmp_path: Path) -> None:
    """LITELLM_LOCAL_MODEL_COST_MAP is set before the import (so no network), once.

    A stand-in ``litellm`` records the variable as it is imported; the real import
    costs seconds and is exercised by every other test here.
    """
    fake = tmp_path / "litellm"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "import os\n"
        "seen = os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP')\n"
        "suppress_debug_info = False\n"
    )
    code = (
        "import sys\n"
        "from four.invoke._lazy import litellm_module\n"
        "m = litellm_module()\n"
        "print(m.seen, m.suppress_debug_info, litellm_module() is m)"
    )
    assert _python(code, PYTHONPATH=f"{tmp_path}:{SRC}") == "True True True"
    chosen = _python(code, PYTHONPATH=f"{tmp_path}:{SRC}", LITELLM_LOCAL_MODEL_COST_MAP="False")
    assert chosen == "False True True"  # the user's choice stands
