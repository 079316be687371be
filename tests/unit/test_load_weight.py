"""`%load_ext blitz_kernel` loads only what every kernel needs: modules that are slow to import
and serve a feature few turns use are imported when that feature is first used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SLOW_AND_RARE = ("jsonschema", "litellm")
"""jsonschema builds its format grammars on import (over a second): only `--schema` with a
JSON-schema dict needs it. litellm: only a model the direct OpenAI path cannot serve."""


def test_load_ext_leaves_slow_rarely_needed_modules_unloaded(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import json, sys
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "blitz_kernel")
        assert "blitz" in shell.magics_manager.magics["cell"]
        print(json.dumps({name: name in sys.modules for name in sys.argv[1:]}))
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-test-not-real"}
    done = subprocess.run(
        [sys.executable, "-c", code, *SLOW_AND_RARE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {name: False for name in SLOW_AND_RARE}
