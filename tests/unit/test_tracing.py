"""OpenTelemetry spans with the real SDK and its in-memory exporter."""

from __future__ import annotations

from .conftest import call, tool_step

TELEMETRY = {"telemetry.enabled": True, "telemetry.exporter": "memory"}


def spans_by_name(ws):
    spans = ws.telemetry.memory.get_finished_spans()
    return {name: [s for s in spans if s.name == name] for name in {s.name for s in spans}}


async def test_ENG90_turn_span_is_a_root_with_model_and_tool_children(make_workspace, tmp_path):
    (tmp_path / "a.txt").write_text("secret content")
    ws, _ = make_workspace(
        [
            tool_step(call("read_file", path="a.txt")),
            {"text": "done", "usage": {"prompt_tokens": 9, "completion_tokens": 2}},
        ],
        **TELEMETRY,
    )
    await ws.run("read a.txt please", session="s", max_turns=7, max_cost_usd=0.5)
    spans = spans_by_name(ws)
    [turn] = spans["blitz.turn"]
    assert turn.parent is None
    attributes = dict(turn.attributes)
    assert attributes["blitz.agent"] == "blitz" and attributes["blitz.model"] == "scripted"
    assert attributes["blitz.session"] == "s" and attributes["blitz.turn_index"] == 0
    assert attributes["blitz.max_turns"] == 7 and attributes["blitz.plan"] is False
    assert attributes["blitz.max_cost_usd"] == 0.5 and "blitz.timeout_s" not in attributes  # None is left out
    assert attributes["blitz.prompt_length"] == len("read a.txt please")
    assert attributes["blitz.model_calls"] == 2 and attributes["blitz.stop_reason"] == "end_turn"
    assert len(spans["blitz.model_call"]) == 2 and len(spans["blitz.tool_call"]) == 1
    for child in spans["blitz.model_call"] + spans["blitz.tool_call"]:
        assert child.parent.span_id == turn.context.span_id
        assert child.context.trace_id == turn.context.trace_id
    recorded = str([dict(s.attributes) for s in ws.telemetry.memory.get_finished_spans()])
    assert "read a.txt please" not in recorded and "secret content" not in recorded and "a.txt" not in recorded


async def test_ENG90_content_only_when_asked(make_workspace):
    ws, _ = make_workspace(
        [tool_step(call("list_files")), {"text": "done"}], **TELEMETRY, **{"telemetry.include_content": True}
    )
    await ws.run("list the files")
    spans = spans_by_name(ws)
    assert spans["blitz.turn"][0].attributes["blitz.prompt"] == "list the files"
    assert spans["blitz.tool_call"][0].attributes["blitz.arguments"] == "{}"


async def test_ENG91_turns_link_to_the_previous_turn_and_asides_get_their_own_span(make_workspace):
    ws, _ = make_workspace([{"text": "one"}, {"text": "aside"}, {"text": "two"}], **TELEMETRY)
    await ws.run("1", session="s")
    await ws.aside("s", "btw?")
    await ws.run("2", session="s")
    spans = spans_by_name(ws)
    first, second = spans["blitz.turn"]
    assert first.links == () or len(first.links) == 0
    [link] = second.links
    assert link.context.span_id == first.context.span_id
    assert link.attributes["link.type"] == "previous_turn"
    assert second.context.trace_id != first.context.trace_id
    [aside] = spans["blitz.aside"]
    assert aside.parent is None and aside.attributes["blitz.mode"] == "btw"


async def test_ENG91_compaction_gets_its_own_span(make_workspace):
    ws, _ = make_workspace([{"text": "a"}, {"text": "b"}, {"text": "SUMMARY"}], **TELEMETRY)
    await ws.run("1", session="s")
    await ws.run("2", session="s")
    await ws.compact("s")
    [compaction] = spans_by_name(ws)["blitz.compaction"]
    assert compaction.parent is None and compaction.attributes["blitz.session"] == "s"


async def test_telemetry_off_exports_nothing(make_workspace):
    ws, _ = make_workspace([{"text": "a"}])
    await ws.run("1")
    assert ws.telemetry.enabled is False and ws.telemetry.memory is None


async def test_telemetry_off_starts_no_span_and_attaches_no_context(make_workspace, monkeypatch):
    """With telemetry off a turn (model calls, a tool call) does no OpenTelemetry work at all."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    attached = []
    original = otel_context.attach
    monkeypatch.setattr(otel_context, "attach", lambda ctx: attached.append(ctx) or original(ctx))
    monkeypatch.setattr(trace.NoOpTracer, "start_span", lambda *a, **k: attached.append("span") or trace.INVALID_SPAN)
    ws, _ = make_workspace([tool_step(call("list_files")), {"text": "done"}])

    result = await ws.run("list", session="s")

    assert result.stop_reason == "end_turn" and ws.telemetry.enabled is False
    assert attached == []
