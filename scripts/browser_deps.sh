#!/usr/bin/env bash
# What the browser tests (tests/browser) need from the system: Debian's Chromium, nothing else.
# Idempotent and quick when it is already there. Never downloads a browser build of its own
# (Playwright drives /usr/bin/chromium). Run as root on a fresh Debian machine.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "browser_deps.sh: /usr/bin/chromium is missing; run me as root to install Debian's chromium" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
