"""Reading an Ollama server's `/api/show` answer: vision from its capabilities, the window
from the `num_ctx` it runs the model with, else the model's trained length."""

from __future__ import annotations

from blitz_kernel.models.ollama_show import context_tokens, ollama_model, sees_images


def test_model_names_on_the_server() -> None:
    assert ollama_model("ollama_chat/gemma3:4b") == "gemma3:4b" and ollama_model("ollama/llava") == "llava"
    assert ollama_model("openai/gpt-4o") is None


def test_vision_comes_from_the_capabilities() -> None:
    assert sees_images({"capabilities": ["completion", "vision"]}) is True
    assert sees_images({"capabilities": ["completion", "tools"]}) is False
    assert sees_images({"modelfile": "FROM x"}) is None and sees_images(None) is None


def test_the_window_is_num_ctx_when_set_else_the_trained_length() -> None:
    info = {
        "parameters": 'num_ctx                        8192\nstop "<eos>"',
        "model_info": {"llama.context_length": 131072},
    }
    assert context_tokens(info) == 8192
    assert context_tokens({"model_info": {"llama.context_length": 131072}}) == 131072
    assert context_tokens({}) is None and context_tokens(None) is None
