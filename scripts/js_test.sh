#!/usr/bin/env bash
# The labextension's checks: type-check its TypeScript and run its unit tests (vitest, in
# node; no browser). Installs node_modules with `npm ci` only when they are not current: not
# after a run that installed them from the same package-lock.json, and not right after
# `pip install` built the labextension (its build ran `npm install` from that lock), so
# repeated runs take a few seconds. It fails when the TypeScript types generated from the Python
# protocol models (labextension/src/generated, docs/widget.md) are stale: they are made again
# in a temporary folder and compared ($PYTHON, or the virtualenv's python, exports the schema),
# and when the built widget modules (blitz_kernel/notebook/widgets/static/turn.js and undo.js,
# from labextension/widget/src) are stale: they are built again in a temporary folder and
# compared.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
  echo "npm not found: the labextension's tests need Node.js >= 20 and npm" >&2
  exit 1
fi
stamp="node_modules/.blitz-lock-sha256"
wanted="$(sha256sum package-lock.json | cut -d' ' -f1)"
current() {
  # installed by an earlier run from this very lock
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    return 0
  fi
  # npm's own record of its last install (any npm install or npm ci writes it), newer than the
  # lock and package.json: node_modules holds what the lock says
  local record="node_modules/.package-lock.json"
  [ -f "$record" ] && [ "$record" -nt package-lock.json ] && [ "$record" -nt package.json ]
}
if current; then
  echo "== node_modules are current (package-lock.json unchanged since the last npm install)"
else
  echo "== npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "$wanted" > "$stamp"
echo "== generated protocol types are current (labextension/src/generated)"
generated="$(mktemp -d)"
trap 'rm -rf "$generated"' EXIT
node scripts/gen_protocol.mjs --out "$generated" >/dev/null
if ! diff -ru labextension/src/generated "$generated"; then
  echo "labextension/src/generated is stale: the Python protocol models changed; run npm run gen:protocol and commit it" >&2
  exit 1
fi
echo "== built widget modules are current (blitz_kernel/notebook/widgets/static)"
node scripts/build_widget.mjs --out "$generated/widget" >/dev/null
for entry in turn undo; do
  if ! diff -u "blitz_kernel/notebook/widgets/static/$entry.js" "$generated/widget/$entry.js"; then
    echo "blitz_kernel/notebook/widgets/static/$entry.js is stale: labextension/widget/src changed; run npm run build:widget and commit it" >&2
    exit 1
  fi
done
echo "== tsc (labextension)"
node_modules/.bin/tsc -b labextension
echo "== tsc (the turn widget, labextension/widget)"
node_modules/.bin/tsc -p labextension/widget
echo "== tsc (labextension tests: they build values of the generated types)"
node_modules/.bin/tsc -p labextension/test
echo "== vitest (labextension)"
node_modules/.bin/vitest run
