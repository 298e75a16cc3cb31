#!/usr/bin/env bash
# What the CLI's real-thing tests need: headless Chromium and ChromeDriver for the
# `four view` page test (tests/cli/test_view.py). Idempotent; run as root by .ci/run.
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
fi
