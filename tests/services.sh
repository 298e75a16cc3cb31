#!/usr/bin/env bash
# System packages and services the real-thing tests need. Idempotent; run as root by .ci/run.
# Each branch keeps its part in its own delimited block.
set -euo pipefail

# --- cli: headless Chromium for the `four view` page test (tests/cli/test_view.py) ---
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
fi
# --- end cli ---
