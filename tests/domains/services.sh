#!/usr/bin/env bash
# What the domain tests need from Debian: help2man and mandoc for the CLI-tool domain's man
# pages, and Go for its Go tools (gcc is on the machine; bubblewrap comes from
# tests/execute/setup_services.sh).
# Idempotent; run as root by .ci/run.
set -euo pipefail

need=()
command -v help2man >/dev/null 2>&1 || need+=(help2man)
command -v mandoc >/dev/null 2>&1 || need+=(mandoc)
command -v man >/dev/null 2>&1 || need+=(man-db)
command -v go >/dev/null 2>&1 || need+=(golang-go)
if ((${#need[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
