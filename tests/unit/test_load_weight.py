"""`%load_ext blitz_kernel` loads only what every kernel needs: modules that are slow to import
and serve a feature few turns use are imported when that feature is first used, and `load()`
itself imports neither the engine nor pydantic (the warm-up thread does that meanwhile)."""

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

ENGINE_AND_MODELS = ("pydantic", "blitz_kernel.engine.workspace", "blitz_kernel.core.history", "blitz_kernel.tools")
"""What the first turn needs and the warm-up thread imports: `%load_ext` must not wait for it."""


def run_in_shell(tmp_path: Path, code: str, names: tuple[str, ...]) -> dict[str, bool]:
    """Run `code` in a fresh interpreter with an IPython shell; it prints, as its last line,
    which of `names` ended up in `sys.modules`."""
    prelude = textwrap.dedent("""
        import json, sys
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        names = sys.argv[1:]
        assert not [name for name in names if name in sys.modules], "IPython itself imported one"
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-test-not-real"}
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code), *names],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_load_ext_leaves_slow_rarely_needed_modules_unloaded(tmp_path: Path) -> None:
    code = """
        shell.run_line_magic("load_ext", "blitz_kernel")
        assert "blitz" in shell.magics_manager.magics["cell"]
        print(json.dumps({name: name in sys.modules for name in names}))
    """
    assert run_in_shell(tmp_path, code, SLOW_AND_RARE) == {name: False for name in SLOW_AND_RARE}


def test_load_ext_itself_imports_no_engine_and_no_pydantic(tmp_path: Path) -> None:
    """What `load()` imports on the kernel's thread, the warm-up thread replaced by one that
    imports nothing, so what the warm-up brings in cannot hide what `load()` does."""
    code = """
        import threading
        from blitz_kernel.notebook import extension

        def no_warm_up():
            thread = threading.Thread(target=lambda: None)
            thread.start()
            return thread

        extension._warm_up_in_background = no_warm_up
        shell.run_line_magic("load_ext", "blitz_kernel")
        for kind, name in (("cell", "blitz"), ("line", "blitz_undo"), ("line", "blitz_mcp")):
            assert name in shell.magics_manager.magics[kind], name
        print(json.dumps({name: name in sys.modules for name in names}))
    """
    assert run_in_shell(tmp_path, code, ENGINE_AND_MODELS) == {name: False for name in ENGINE_AND_MODELS}


def test_the_warm_up_loads_the_engine_for_the_first_turn(tmp_path: Path) -> None:
    code = """
        from blitz_kernel.notebook import extension

        shell.run_line_magic("load_ext", "blitz_kernel")
        extension._state["warm_up"].join(timeout=60)
        assert not extension._state["warm_up"].is_alive(), "the warm-up did not finish"
        print(json.dumps({name: name in sys.modules for name in names}))
    """
    assert run_in_shell(tmp_path, code, ENGINE_AND_MODELS) == {name: True for name in ENGINE_AND_MODELS}
