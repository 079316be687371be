"""Structured output: a turn run with a schema ends with validated data in `TurnResult.output`,
handed over through the `final_result` tool; wrong data is sent back with its errors at most
twice, then the turn fails with one line (docs/structured-output.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from blitz_kernel.core.history import UserMessage, check_history
from blitz_kernel.core.numbers import RunOptionError
from blitz_kernel.engine.turn.structured import FINAL_RESULT, output_schema
from blitz_kernel.models.base import supports_response_schema
from blitz_kernel.models.fallback import FallbackModel
from blitz_kernel.models.scripted import ScriptedModel
from tests.helpers.workspaces import open_workspace

from .conftest import call, result_of, tool_step


class Revenue(BaseModel):
    region: str
    total: float


async def test_a_valid_final_result_ends_the_turn_with_the_model_instance(make_workspace):
    ws, model = make_workspace([tool_step(call(FINAL_RESULT, region="north", total=12.5))])
    result = await ws.run("revenue by region", output_type=Revenue)
    assert result.stop_reason == "end_turn"
    assert result.output == Revenue(region="north", total=12.5)
    assert json.loads(result.text.removeprefix("```json\n").removesuffix("\n```")) == {"region": "north", "total": 12.5}
    request = model.requests[0]
    [spec] = [s for s in request.tools if s.name == FINAL_RESULT]
    assert spec.parameters["properties"]["total"]["type"] == "number"
    assert FINAL_RESULT in request.system  # the model is told how to finish
    assert len(model.requests) == 1  # accepted: no further model call
    check_history(ws.session("default").history)


async def test_invalid_data_goes_back_with_its_errors_and_the_fix_is_accepted(make_workspace):
    ws, model = make_workspace(
        [
            tool_step(call(FINAL_RESULT, region="north", total="a lot")),
            tool_step(call(FINAL_RESULT, region="north", total=3)),
        ]
    )
    result = await ws.run("revenue", output_type=Revenue)
    assert result.output == Revenue(region="north", total=3.0)
    refused = result_of(model, request=1)
    assert not refused.ok
    assert "total" in (refused.error or "") and "Revenue" in (refused.error or "")


async def test_three_failed_attempts_fail_the_turn_in_one_line_with_a_valid_history(make_workspace):
    bad = tool_step(call(FINAL_RESULT, region=1))
    ws, _ = make_workspace([bad, bad, bad, {"text": "never asked"}])
    result = await ws.run("revenue", output_type=Revenue)
    assert result.stop_reason == "error"
    assert result.output is None
    assert result.error is not None and "after 3 attempts" in result.error and "\n" not in result.error
    check_history(ws.session("default").history)


async def test_a_plain_json_answer_is_accepted_and_plain_prose_is_asked_again(make_workspace):
    ws, model = make_workspace(
        [{"text": "The north made 7."}, {"text": '```json\n{"region": "north", "total": 7}\n```'}]
    )
    result = await ws.run("revenue", output_type=Revenue)
    assert result.output == Revenue(region="north", total=7)
    asked = model.requests[1].messages[-1]
    assert isinstance(asked, UserMessage) and FINAL_RESULT in asked.text
    check_history(ws.session("default").history)


async def test_a_json_schema_dict_and_a_non_object_type_are_checked_as_given(make_workspace):
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}
    ws, _ = make_workspace([tool_step(call(FINAL_RESULT, n=0)), tool_step(call(FINAL_RESULT, n=2))])
    result = await ws.run("count", output_type=schema)
    assert result.output == {"n": 2}

    ws, model = make_workspace([tool_step(call(FINAL_RESULT, result=[1, 2, 3]))])
    listed = await ws.run("numbers", session="other", output_type=list[int])
    assert listed.output == [1, 2, 3]
    [spec] = [s for s in model.requests[0].tools if s.name == FINAL_RESULT]
    assert spec.parameters["required"] == ["result"]


async def test_allowed_tools_still_let_the_turn_answer(make_workspace):
    ws, _ = make_workspace([tool_step(call(FINAL_RESULT, region="s", total=1))])
    result = await ws.run("x", tools=["read_file"], output_type=Revenue)
    assert result.output == Revenue(region="s", total=1)


async def test_a_turn_without_a_schema_has_no_final_result_tool(make_workspace):
    ws, model = make_workspace([tool_step(call(FINAL_RESULT, a=1)), {"text": "ok"}])
    result = await ws.run("x")
    assert result.output is None
    assert FINAL_RESULT not in [s.name for s in model.requests[0].tools]
    assert "unknown tool" in (result_of(model).error or "")


@pytest.mark.parametrize(
    ("spec", "wording"),
    [
        ({"type": "nonsense"}, "not a valid JSON schema"),
        (object(), "must be a pydantic model class"),
    ],
)
def test_a_schema_that_cannot_be_used_is_one_clear_error(spec, wording):
    with pytest.raises(RunOptionError, match=wording):
        output_schema(spec)


# -- natively: the provider's own structured output, in a final request without tools ---------


def native_workspace(tmp_path, steps):
    model = ScriptedModel(steps, response_schema=True)
    return open_workspace(tmp_path, model), model


async def test_natively_the_turn_keeps_its_tools_and_asks_for_the_data_in_a_final_request(tmp_path):
    ws, model = native_workspace(
        tmp_path,
        [
            tool_step(call("list_files", path=".")),
            {"text": "The north made 12.5."},
            {"text": '{"region": "north", "total": 12.5}'},
        ],
    )
    result = await ws.run("revenue by region", output_type=Revenue)
    assert result.stop_reason == "end_turn"
    assert result.output == Revenue(region="north", total=12.5)
    working, final = model.requests[1], model.requests[2]
    assert FINAL_RESULT not in [s.name for s in model.requests[0].tools]  # no tool stands in for it
    assert working.tools and working.response_schema is None  # the turn's tools work as usual
    assert final.tools == [] and final.response_schema is not None
    assert final.response_schema.name == "Revenue"
    assert final.response_schema.json_schema["properties"]["total"]["type"] == "number"
    assert final.response_schema.strict is False  # pydantic's schema is not in OpenAI's strict subset
    asked = final.messages[-1]
    assert isinstance(asked, UserMessage) and "Revenue" in asked.text
    check_history(ws.session("default").history)


async def test_natively_an_answer_that_is_already_valid_data_needs_no_final_request(tmp_path):
    ws, model = native_workspace(tmp_path, [{"text": '{"region": "south", "total": 1}'}])
    result = await ws.run("revenue", output_type=Revenue)
    assert result.output == Revenue(region="south", total=1)
    assert len(model.requests) == 1


async def test_natively_wrong_data_is_retried_with_its_errors_then_fails_in_one_line(tmp_path):
    bad = {"text": '{"region": "north", "total": "a lot"}'}
    ws, model = native_workspace(tmp_path, [{"text": "done"}, bad, bad, bad, {"text": "never asked"}])
    result = await ws.run("revenue", output_type=Revenue)
    assert result.stop_reason == "error" and result.output is None
    assert result.error is not None and "after 3 attempts" in result.error and "\n" not in result.error
    retry = model.requests[2]
    assert retry.response_schema is not None and retry.tools == []
    assert "total" in retry.messages[-1].text and FINAL_RESULT not in retry.messages[-1].text
    assert len(model.requests) == 4  # the prose answer is the model saying it is done, not an attempt
    check_history(ws.session("default").history)


async def test_natively_a_non_object_schema_is_wrapped_and_unwrapped(tmp_path):
    ws, model = native_workspace(tmp_path, [{"text": "three numbers"}, {"text": '{"result": [1, 2, 3]}'}])
    result = await ws.run("numbers", output_type=list[int])
    assert result.output == [1, 2, 3]
    shape = model.requests[1].response_schema
    assert shape is not None and shape.name == "list" and shape.json_schema["required"] == ["result"]


def test_a_closed_schema_with_every_property_required_is_strict():
    properties: dict[str, Any] = {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}
    closed = {
        "type": "object",
        "properties": properties,
        "required": ["n", "tags"],
        "additionalProperties": False,
    }
    assert output_schema(closed, "Closed").response_schema().strict is True
    assert output_schema(closed, "rows by region!").response_schema().name == "rows_by_region"  # OpenAI's name pattern
    nested_open = {
        **closed,
        "properties": {**properties, "inner": {"type": "object"}},
        "required": ["n", "tags", "inner"],
    }
    assert output_schema(nested_open, "Open").response_schema().strict is False


async def test_a_fallback_chain_answers_natively_only_when_every_model_can(tmp_path):
    step = tool_step(call(FINAL_RESULT, region="west", total=2))
    chain = FallbackModel([ScriptedModel([step], response_schema=True), ScriptedModel([], response_schema=False)])
    ws = open_workspace(tmp_path, chain)
    result = await ws.run("revenue", output_type=Revenue)
    assert result.output == Revenue(region="west", total=2)  # through final_result: the fallback lacks it
    assert supports_response_schema(chain) is False
    both = FallbackModel([ScriptedModel([], response_schema=True), ScriptedModel([], response_schema=True)])
    assert supports_response_schema(both) is True
