#!/usr/bin/env bash
# The OTLP receiver the OpenTelemetry tests send spans to and read them back from:
# Arize Phoenix (PyPI), in a venv of its own under the user's cache folder, so a later
# run finds it (reinstalled only when phoenix.txt changes). Why this receiver: docs/otel.md.
# Idempotent; run by .ci/run. The tests start and stop it themselves (tests/otel/conftest.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/four/phoenix"
if [ -x "$venv/bin/phoenix" ] && cmp -s "$here/phoenix.txt" "$venv/phoenix.txt"; then
    exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/phoenix.txt"
cp "$here/phoenix.txt" "$venv/phoenix.txt"
