"""Structured output (`%%blitz --schema NAME`, `Workspace.run(output_type=…)`): the turn ends
with data validated against a schema, in `TurnResult.output` (docs/structured-output.md).

Two ways to hand the data over, chosen per turn by the model it runs on:

- Native: a model whose provider takes a JSON schema for its answer (the adapter's
  `supports_response_schema`) works with its tools as usual; once it answers in text that is
  not valid data, one final request asks for the data with the provider's structured output
  and no tools (a provider's JSON mode forbids or ignores tools on that request).
- Tool: every other model gets the `final_result` tool, whose parameters are the schema; it
  works wherever tool calls do and mixes with the turn's other calls.

Data that fails validation goes back with the errors (as the tool result, or as a message
before the next final request); an answer in plain text is read as JSON first. After
`MAX_RETRIES` failed attempts the turn fails with one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from ...core.history import TextPart, UserMessage
from ...core.numbers import RunOptionError
from ...errors import BlitzError
from ...models.base import ResponseSchema
from ...tools.registry import PassthroughArgs, Tool, ToolContext, ToolError, ToolKind

FINAL_RESULT = "final_result"
"""The tool the model calls with the turn's structured answer."""
MAX_RETRIES = 2
"""Failed attempts sent back to the model with their errors before the turn fails."""
WRAPPED = "result"
"""The one property a schema that is not an object is wrapped in (tool parameters are objects)."""


class StructuredOutputError(BlitzError):
    """The model's answer did not match the schema after every retry."""


@dataclass(frozen=True)
class OutputSchema:
    """What a turn's answer must be: the schema the model sees and the check its data passes."""

    name: str
    json_schema: dict[str, Any]
    """The schema of the data itself (a pydantic model's, or the user's dict)."""
    check: Callable[[Any], Any]
    """Validates the data and returns the output (an instance for a pydantic model)."""
    native: bool = False
    """Asked for with the provider's own structured output (`for_model`), not `final_result`."""

    def for_model(self, native: bool) -> OutputSchema:
        """This schema as the turn's model takes it: natively, or through `final_result`."""
        return replace(self, native=native)

    @property
    def wrapped(self) -> bool:
        return self.json_schema.get("type") != "object"

    def parameters(self) -> dict[str, Any]:
        if not self.wrapped:
            return self.json_schema
        return {"type": "object", "properties": {WRAPPED: self.json_schema}, "required": [WRAPPED]}

    def validate(self, arguments: dict[str, Any]) -> Any:
        """The output from `final_result`'s arguments; ValueError lists what is wrong."""
        data = arguments.get(WRAPPED) if self.wrapped else arguments
        if self.wrapped and WRAPPED not in arguments:
            raise ValueError(f"put the answer in the {WRAPPED!r} argument")
        return self.check(data)

    def response_schema(self) -> ResponseSchema:
        """The schema as the provider's structured output takes it: a name of OpenAI's pattern,
        an object root, and `strict` only where the schema is in OpenAI's strict subset."""
        name = re.sub(r"[^A-Za-z0-9_-]+", "_", self.name).strip("_")[:64] or "output"
        parameters = self.parameters()
        return ResponseSchema(name=name, json_schema=parameters, strict=_strict_subset(parameters))

    def instructions(self) -> str:
        if self.native:
            return (
                f"\n\nThis turn must end with structured data ({self.name}): when you have the answer, "
                "reply with it; it is then asked for once more, as JSON of that shape."
            )
        return (
            f"\n\nThis turn must end with structured data ({self.name}): when you have the answer, "
            f"call {FINAL_RESULT} with it, exactly once, as your last action."
        )


def _strict_subset(schema: Any) -> bool:
    """Whether OpenAI's strict mode takes `schema`: every object closed
    (`additionalProperties: false`) with every property required. Pydantic's schemas are
    not, unless the model forbids extra fields and has no defaults; then strict is off and the
    answer is still validated here."""
    if isinstance(schema, list):
        return all(_strict_subset(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or ()) != set(properties):
            return False
    return all(_strict_subset(value) for key, value in schema.items() if key not in ("enum", "const", "default"))


def output_schema(spec: Any, name: str | None = None) -> OutputSchema:
    """An `OutputSchema` from a pydantic model class, any type pydantic can validate
    (`list[int]`, a dataclass, a TypedDict) or a JSON-schema dict; RunOptionError says why not."""
    if isinstance(spec, OutputSchema):
        return spec
    if isinstance(spec, dict):
        return _from_json_schema(spec, str(name) if name else str(spec.get("title") or "the schema"))
    if isinstance(spec, type) and issubclass(spec, BaseModel):
        model = spec
        return OutputSchema(name or model.__name__, model.model_json_schema(), model.model_validate)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(spec)
        schema = adapter.json_schema()
    except Exception as error:  # pydantic's errors for a type it cannot describe vary
        raise RunOptionError(
            f"the output schema must be a pydantic model class, a type pydantic can validate or a "
            f"JSON-schema dict, not {type(spec).__name__} ({error})"
        ) from None
    return OutputSchema(name or str(getattr(spec, "__name__", repr(spec))), schema, adapter.validate_python)


def _from_json_schema(schema: dict[str, Any], name: str) -> OutputSchema:
    # imported here: jsonschema builds its format grammars on import (over a second), which
    # every kernel would pay at `%load_ext` for a schema few turns use
    import jsonschema

    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise RunOptionError(f"the output schema is not a valid JSON schema: {error.message}") from None
    validator = validator_class(schema)

    def check(data: Any) -> Any:
        problems = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if problems:
            raise ValueError("; ".join(_where(e.absolute_path) + e.message for e in problems[:5]))
        return data

    return OutputSchema(name, schema, check)


def _where(path: Any) -> str:
    parts = [str(p) for p in path]
    return f"{'.'.join(parts)}: " if parts else ""


def _problems(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(value)'}: {e['msg']}" for e in error.errors()[:5])
    return str(error)


class OutputFlow:
    """One turn's structured answer: the attempts so far and the value once one passed."""

    def __init__(self, schema: OutputSchema) -> None:
        self.schema = schema
        self.asking = False
        """Native only: the model said it is done; the next request asks for the data."""
        self.failures = 0
        self.value: Any = None
        self.done = False
        self.failure: str | None = None
        """Set once the attempts are spent; `settle` ends the turn with it."""

    def submit(self, arguments: dict[str, Any]) -> str:
        """`final_result`'s call: the value is kept, or ToolError tells the model what to fix."""
        try:
            self.value, self.done = self.schema.validate(arguments), True
        except (ValidationError, ValueError) as error:
            raise ToolError(self._retry_text(_problems(error))) from None
        return f"{self.schema.name} accepted; the turn ends here"

    def accept_text(self, text: str) -> UserMessage | None:
        """A plain-text answer: read as JSON (a fenced block too) when it validates; else the
        message that asks again (None once accepted). Natively, the first answer that holds no
        valid data is the model saying it is done, not a failed attempt: the data is asked for
        next, in the provider's structured output."""
        try:
            # The final request's answer is the parameters object itself (a wrapped schema's too).
            data = _json_in(text, False, native=True) if self.asking else _json_in(text, self.schema.wrapped)
            self.value, self.done = self.schema.validate(data), True
            return None
        except (ValidationError, ValueError) as error:
            problem = _problems(error)
        if self.schema.native and not self.asking:
            self.asking = True
            return UserMessage(parts=[TextPart(text=f"[blitz] Now give the answer as {self.schema.name} data.")])
        return UserMessage(parts=[TextPart(text=f"[blitz] {self._retry_text(problem)}")])

    def request_schema(self) -> ResponseSchema | None:
        """The schema the next request asks the provider for (natively, once the model is done)."""
        return self.schema.response_schema() if self.asking else None

    def answer_text(self) -> str:
        """The turn's answer as the user reads it: the data as JSON."""
        data = self.value.model_dump(mode="json") if isinstance(self.value, BaseModel) else self.value
        try:
            shown = json.dumps(data, indent=2, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            shown = repr(data)
        return f"```json\n{shown}\n```"

    def settle(self) -> bool:
        """After a step: True once the data was accepted; StructuredOutputError once the
        attempts are spent (raised here, by the loop, since a tool's own errors are results)."""
        if self.failure is not None:
            raise StructuredOutputError(self.failure)
        return self.done

    def _retry_text(self, problem: str) -> str:
        self.failures += 1
        if self.failures > MAX_RETRIES:
            self.failure = f"the answer did not match {self.schema.name} after {self.failures} attempts: {problem}"
        again = "Give it again, fixed" if self.schema.native else f"Call {FINAL_RESULT} again with the fix"
        return f"the answer does not match {self.schema.name}: {problem}. {again}."


_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.DOTALL)


def _json_in(text: str, wrapped: bool, *, native: bool = False) -> dict[str, Any]:
    """The JSON a plain-text answer holds; ValueError when it holds none."""
    fenced = _FENCED.search(text)
    raw = fenced.group(1) if fenced else text.strip()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        raise ValueError(
            "no JSON data came" if native else f"no data came: call {FINAL_RESULT} with the answer"
        ) from None
    if wrapped:
        return {WRAPPED: data}
    if not isinstance(data, dict):
        raise ValueError("the answer must be a JSON object")
    return data


def final_result_tool(schema: OutputSchema) -> Tool:
    """The `final_result` tool for this schema; it acts on the running turn."""

    async def final_result(args: PassthroughArgs, ctx: ToolContext) -> str:
        if ctx.turn is None:
            raise ToolError(f"{FINAL_RESULT} works only inside a running turn")
        return ctx.turn.submit_output(args.as_dict())

    return Tool(
        name=FINAL_RESULT,
        description=f"Give the turn's final answer as {schema.name}; the turn ends once it is accepted.",
        args_model=PassthroughArgs,
        kind=ToolKind.WORKFLOW,
        func=final_result,
        schema=schema.parameters(),
    )
