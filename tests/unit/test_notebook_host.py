"""`blitz run`'s side of the notebook bridge (cli/notebook_host.py) on an nbformat notebook,
and the kernel's checks of the `set_outputs` op (bridge_messages.py)."""

from __future__ import annotations

import nbformat
import pytest

from blitz_kernel.cli.notebook_host import HostRefusal, NotebookHost
from blitz_kernel.notebook.bridge_messages import checked_result, request_data


def host() -> NotebookHost:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("%%blitz\nAdd cells.")]
    served = NotebookHost(nb, "out.ipynb")
    served.running = nb.cells[1]
    return served


def test_cells_are_read_inserted_and_given_outputs_in_memory() -> None:
    served = host()
    mark = {"session": "default", "turn": 0, "edited": True}
    inserted = served.answer("insert_cell", {"index": 2, "cell_type": "code", "source": "x = 1", "metadata": mark})
    assert inserted["index"] == 2 and inserted["cell_count"] == 3
    new = served.nb.cells[2]
    assert new.metadata["blitz"] == mark and new.metadata["papermill"]["status"] == "pending"
    read = served.answer("read_cells", {"indices": None, "include_outputs": True})
    assert checked_result("read_cells", read) == read
    assert [c["running"] for c in read["cells"]] == [False, True, False]
    outputs = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    before = served.answer("set_outputs", {"id": new.id, "outputs": outputs, "execution_count": 4, "metadata": None})
    assert checked_result("set_outputs", before) == before
    assert before["previous_metadata"] == mark and before["previous_outputs"] == []
    assert new.outputs[0].text == "1\n" and new.execution_count == 4 and "blitz" not in new.metadata
    assert id(new) in served.ran


def test_the_running_cell_and_missing_cells_are_refused() -> None:
    served = host()
    with pytest.raises(HostRefusal, match="it is the running %%blitz cell"):
        served.answer("delete_cell", {"index": 1})
    with pytest.raises(HostRefusal, match="no cell 5"):
        served.answer("replace_cell", {"index": 5, "source": "x"})
    with pytest.raises(HostRefusal, match="only code cells have outputs"):
        served.answer("set_outputs", {"id": served.nb.cells[0].id, "outputs": [], "execution_count": None})
    with pytest.raises(HostRefusal, match="unknown op"):
        served.answer("run_everything", {})


def test_set_outputs_params_are_checked_before_anything_is_sent() -> None:
    sent = request_data("r-1", "set_outputs", {"id": "c1", "outputs": [], "execution_count": 3, "metadata": None})
    assert sent["params"] == {"id": "c1", "outputs": [], "execution_count": 3, "metadata": None}
    with pytest.raises(ValueError, match="bad params for set_outputs: id: Field required"):
        request_data("r-2", "set_outputs", {"outputs": [], "execution_count": 3})
