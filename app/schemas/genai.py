"""The shapes of what ADK events carry from google-genai, `content` and `usageMetadata`, for
the spec only: generated SDKs then type an event's text, function calls and responses, files
and token counts. The service stores events verbatim and checks none of this: every field is
optional and nullable (as google-genai's own models have them), and fields not listed here are
kept as sent."""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from typing_extensions import TypeAliasType

JsonObject = TypeAliasType(
    "JsonObject", Annotated[dict[str, Any], Field(description="Any JSON object.")]
)


class GenaiRecord(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class FunctionCall(GenaiRecord):
    """A call of a function (a tool) the model asks for."""

    id: str | None = Field(
        default=None, description="The call's id, which its `functionResponse` carries."
    )
    name: str | None = Field(default=None, description="The function's name.")
    args: JsonObject | None = Field(default=None, description="The arguments, by name.")


class FunctionResponse(GenaiRecord):
    """The result of a function call, sent back to the model."""

    id: str | None = Field(default=None, description="The id of the call it answers.")
    name: str | None = Field(default=None, description="The function's name.")
    response: JsonObject | None = Field(
        default=None, description="The result (`output`) or the error (`error`)."
    )
    will_continue: bool | None = Field(
        default=None, description="More responses to the same call follow."
    )


class Blob(GenaiRecord):
    """Bytes carried in the event."""

    mime_type: str | None = Field(default=None, description="The IANA media type.")
    data: str | None = Field(default=None, description="The bytes, base64-encoded.")
    display_name: str | None = None


class FileData(GenaiRecord):
    """A file the event refers to by URI."""

    mime_type: str | None = Field(default=None, description="The IANA media type.")
    file_uri: str | None = Field(default=None, description="Where the file is.")
    display_name: str | None = None


class ExecutableCode(GenaiRecord):
    """Code the model wrote, to be run."""

    language: str | None = Field(default=None, description="e.g. `PYTHON`.")
    code: str | None = None


class CodeExecutionResult(GenaiRecord):
    """What running `executableCode` gave."""

    outcome: str | None = Field(default=None, description="e.g. `OUTCOME_OK`.")
    output: str | None = Field(default=None, description="Its output, or the error.")


class Part(GenaiRecord):
    """One part of a message: usually one of these fields."""

    text: str | None = None
    thought: bool | None = Field(default=None, description="The text is the model's thinking.")
    thought_signature: str | None = Field(
        default=None, description="An opaque signature of the thought, base64-encoded."
    )
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    executable_code: ExecutableCode | None = None
    code_execution_result: CodeExecutionResult | None = None


class Content(GenaiRecord):
    """A message, as ADK events carry it (google-genai's `Content`): who speaks and the parts
    of what they say."""

    role: str | None = Field(default=None, description="`user` or `model`.")
    parts: list[Part] | None = None


class UsageMetadata(GenaiRecord):
    """The token counts the model reported for the response an event holds (google-genai's
    `GenerateContentResponseUsageMetadata`). A session's `usage` sums the prompt, candidates
    and total counts of its events, each counted when it is a whole number from 0 to
    2^63 - 1 (one past it is a 422; anything else is kept as sent, and counts 0)."""

    prompt_token_count: int | None = None
    candidates_token_count: int | None = None
    total_token_count: int | None = None
    cached_content_token_count: int | None = None
    thoughts_token_count: int | None = None
    tool_use_prompt_token_count: int | None = None


# The schemas the spec adds for these (`app.api.spec`).
GENAI_SCHEMAS: tuple[type[BaseModel], ...] = (Content, UsageMetadata)
