"""`@` references in `%%blitz` prompts in a real kernel: what the model receives (the fake
server's request log), and a reference to nothing failing before any model call."""

from __future__ import annotations

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import last_user_text

from .driver import KernelDriver


def test_a_dataframe_reference_reaches_the_model_with_its_description(kernel: KernelDriver, server: FakeOpenAIServer):
    setup = kernel.run("import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'e'], 'units': [3, 5, 8]})")
    assert setup.status == "ok", setup.reply
    server.enqueue({"text": "Three regions."})
    cell = kernel.run("%%blitz -s refs\nHow many regions are in @sales?")
    assert cell.status == "ok", cell.reply
    assert "📎 variable @sales (" in cell.stdout
    [request] = server.requests
    text = last_user_text(request.body)
    assert "[Attachment variable @sales]" in text
    assert "sales: DataFrame: 3 rows × 2 columns" in text
    assert "units" in text and "head(5):" in text
    assert text.endswith("How many regions are in @sales?")


def test_the_previous_cell_and_its_error_reach_the_model(kernel: KernelDriver, server: FakeOpenAIServer):
    failed = kernel.run("totals = {'a': 1}\ntotals['b']")
    assert failed.status == "error"
    server.enqueue({"text": "The key 'b' is missing."})
    cell = kernel.run("%%blitz -s refs-cell\nFix the error in @cell")
    assert cell.status == "ok", cell.reply
    text = last_user_text(server.requests[0].body)
    assert "totals['b']" in text
    assert "→ error: KeyError: 'b'" in text


def test_a_reference_to_nothing_fails_in_one_line_and_calls_no_model(kernel: KernelDriver, server: FakeOpenAIServer):
    kernel.run("nosuch_twin = 1")
    cell = kernel.run("%%blitz -s refs-missing\nWhat is @nosuch?")
    assert cell.status == "error"
    assert cell.ename == "UsageError"
    assert "\n" not in cell.evalue
    assert cell.evalue.startswith("@nosuch: no variable named 'nosuch'; did you mean @nosuch_twin?")
    assert server.requests == []


def test_the_last_figure_shown_is_attached_as_an_image(kernel: KernelDriver, server: FakeOpenAIServer):
    drawn = kernel.run("%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
    assert drawn.status == "ok" and drawn.count("display_data") == 1, drawn.reply
    server.enqueue({"text": "A line that rises, then falls."})
    cell = kernel.run("%%blitz -s refs-fig\nWhat does @fig show?")
    assert cell.status == "ok", cell.reply
    assert "📎 figure @fig (" in cell.stdout
    text = last_user_text(server.requests[0].body)
    # the fake model is not known to see images: the image is left out, and the model is told
    assert "[Attachment figure @fig: an image, left out because this model cannot see images]" in text


def test_a_vision_model_gets_the_figure_first(kernel: KernelDriver, server: FakeOpenAIServer):
    drawn = kernel.run("%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.bar([1, 2], [3, 4])\nplt.show()")
    assert drawn.status == "ok", drawn.reply
    server.enqueue({"text": "Two bars."})
    cell = kernel.run("%%blitz -s refs-vision -m openai/gpt-4o\nDescribe @fig")
    assert cell.status == "ok", cell.reply
    content = [m for m in server.requests[0].body["messages"] if m["role"] == "user"][-1]["content"]
    assert [part["type"] for part in content] == ["image_url", "text"]
    assert content[0]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert "[Attachment figure @fig]\nthe last figure shown (image/png, displayed by In[" in content[1]["text"]
