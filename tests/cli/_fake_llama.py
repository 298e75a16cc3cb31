"""A stand-in for ``four.invoke._llama_child`` that loads nothing: it says the address in
``FOUR_TEST_LLAMA_ADDRESS`` (a loopback test server's) as the real child does, writes its
pid to ``FOUR_TEST_LLAMA_PID``, and serves until its standard input reaches end of file.

    python tests/cli/_fake_llama.py SETTINGS_JSON
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    Path(os.environ["FOUR_TEST_LLAMA_PID"]).write_text(str(os.getpid()))
    print(json.dumps({"address": os.environ["FOUR_TEST_LLAMA_ADDRESS"]}), flush=True)
    while os.read(0, 4096):  # until the parent's end of the pipe closes
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
