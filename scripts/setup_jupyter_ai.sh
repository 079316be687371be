# Makes .venv-jupyter-ai: Jupyter AI 3 in an environment of its own, with the Blitz persona
# (integrations/jupyter-ai) installed editable. Jupyter AI cannot share blitz's environment
# (its pins need mcp<2 and agent-client-protocol<0.12; blitz needs mcp>=2.3 and ACP SDK 0.12),
# and need not: the persona starts `blitz acp` from blitz's own environment as a subprocess and
# the two talk ACP over stdio. Re-installs only when this script or the persona's pyproject.toml
# changed, so repeated runs start fast. From PyPI only.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
venv=".venv-jupyter-ai"
if [ ! -x "$venv/bin/python" ]; then
  echo "== creating $venv"
  "$PYTHON" -m venv "$venv"
fi
stamp="$venv/.blitz-jupyter-ai-installed"
wanted="$(cat scripts/setup_jupyter_ai.sh integrations/jupyter-ai/pyproject.toml integrations/jupyter-ai/constraints.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  started=$SECONDS
  echo "== installing Jupyter AI 3 and the Blitz persona into $venv (the first time about a minute or two)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -U pip 2>&1 | grep -v "^WARNING: Location" || true
  "$venv/bin/python" -m pip install --disable-pip-version-check -c integrations/jupyter-ai/constraints.txt \
    'jupyter-ai==3.2.*' 'jupyter-ai-acp-client==0.3.*' -e './integrations/jupyter-ai[test]' 2>&1 \
    | grep --line-buffered -E "^(Collecting|Building|Installing collected|ERROR)" \
    | sed -u -E 's/^Installing collected packages:.*/   installing the collected packages …/; s/^(Collecting|Building)/   \1/' || true
  # fail loudly if the install did not work
  "$venv/bin/python" -c 'import jupyter_ai, jupyter_ai_acp_client, blitz_jupyter_ai, pytest'
  echo "$wanted" > "$stamp"
  echo "== $venv ready in $((SECONDS - started)) s"
fi
