#!/usr/bin/env bash
# The labextension's checks: type-check its TypeScript and run its unit tests (vitest, in
# node; no browser). Installs node_modules with `npm ci` only when package-lock.json changed
# since the last install, so repeated runs take a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
  echo "npm not found: the labextension's tests need Node.js >= 20 and npm" >&2
  exit 1
fi
stamp="node_modules/.blitz-lock-sha256"
wanted="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  echo "== npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$wanted" > "$stamp"
fi
echo "== tsc (labextension)"
node_modules/.bin/tsc -b labextension
echo "== vitest (labextension)"
node_modules/.bin/vitest run
