# Sourced by scripts/test and scripts/demo: makes .venv and installs the project with its dev
# extra. Re-installs only when pyproject.toml changed, so repeated runs start fast.
set -euo pipefail
# litellm would otherwise fetch its price map from the network on import (never wanted here)
export LITELLM_LOCAL_MODEL_COST_MAP=True
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "blitz_kernel needs Python >= 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.blitz-installed"
wanted="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  echo "== installing blitz_kernel and its dev dependencies into .venv (the first time takes a few"
  echo "   minutes: ~200 packages, then the labextension is built with npm); one line per package:"
  .venv/bin/python -m pip install -q --disable-pip-version-check -U pip 2>&1 | grep -v "^WARNING: Location" || true
  # pip's own lines, shortened to what is being fetched and built (no silent minutes)
  .venv/bin/python -m pip install --disable-pip-version-check -e '.[dev]' 2>&1 \
    | grep --line-buffered -E "^(Collecting|Building|Installing collected|ERROR)" \
    | sed -u -E 's/^Installing collected packages:.*/   installing the collected packages …/; s/^(Collecting|Building)/   \1/' || true
  .venv/bin/python -c 'import blitz_kernel, litellm, ipykernel' # fail loudly if the install did not work
  echo "$wanted" > "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"
