"""The ground of the wire format: ids, numbers and times with their ranges, state, and the
three kinds of model (a response, a control body that refuses unknown fields, an ADK record
kept verbatim)."""

import dataclasses
from typing import Annotated, Any, ClassVar, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    create_model,
    model_validator,
)
from pydantic.alias_generators import to_camel
from typing_extensions import TypeAliasType

from app.limits import ID_LENGTH, ID_PATTERN, INT64_MAX, MAX_TIMESTAMP, MIN_TIMESTAMP, SESSION_VERBS

ID_DESCRIPTION = f"1 to {ID_LENGTH} characters, no `/`, no control characters, not `.` or `..`."


Id = Annotated[
    str,
    StringConstraints(min_length=1, max_length=ID_LENGTH, pattern=ID_PATTERN),
    Field(description=ID_DESCRIPTION),
]


def _not_a_verb(session_id: str) -> str:
    verb = session_id.rpartition(":")[2]
    if ":" in session_id and verb in SESSION_VERBS:
        raise ValueError(f"a session id must not end in `:{verb}`, which names a verb on its path")
    return session_id


# A session id a new session may take: not ending in a verb of the session paths.
SessionId = Annotated[Id, AfterValidator(_not_a_verb)]
NewSessionId = Annotated[
    SessionId,
    Field(
        description=f"{ID_DESCRIPTION} Not ending in a verb of the session paths "
        f"({', '.join(f'`:{verb}`' for verb in SESSION_VERBS)}). Generated (a UUID) when absent."
    ),
]
Seq = Annotated[int, Field(ge=0, le=INT64_MAX)]
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]


# Epoch seconds, years 1 to 9999: every time the wire takes.
EpochSeconds = Annotated[float, Field(ge=MIN_TIMESTAMP, le=MAX_TIMESTAMP, allow_inf_nan=False)]


# A named alias, so the spec has one `State` schema and generated SDKs one State class.
State = TypeAliasType(
    "State",
    Annotated[
        dict[str, Any],
        Field(
            description="Key-value state. In a delta, `app:` and `user:` keys address the app's "
            "and the user's shared state and `temp:` keys are dropped; values are any JSON."
        ),
    ],
)


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, strict=True
    )


def wire_model(value_type: type, **descriptions: str) -> type[WireModel]:
    """The wire model of a domain dataclass whose fields are the answer's, each as named
    (camelCase on the wire), with the descriptions the spec gives them: one shape, written
    once, in `app.domain`."""
    hints = get_type_hints(value_type)
    fields: dict[str, Any] = {
        field.name: (hints[field.name], Field(description=descriptions.get(field.name)))
        for field in dataclasses.fields(value_type)
    }
    return create_model(value_type.__name__, __base__=WireModel, **fields)


class ControlBody(WireModel):
    """A request body the service interprets itself: unknown fields are mistakes, refused."""

    model_config = ConfigDict(extra="forbid")


def _never_null(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """The spec of an `OpenRecord`: its read fields may be left out but are not null."""
    nullable = {to_camel(name) for name in getattr(model, "NULLABLE", ())}
    for name, prop in schema.get("properties", {}).items():
        options = prop.get("anyOf")
        if options is not None and name not in nullable:
            del prop["anyOf"]
            prop.update(next(option for option in options if option.get("type") != "null"))
            if prop.get("default", ...) is None:
                del prop["default"]


class OpenRecord(WireModel):
    """An ADK record kept verbatim: every field the service does not read is stored exactly
    as sent. The fields it reads are accepted in snake_case too and stored camelCase; they
    may be left out, but not sent as null where ADK's own models refuse null (`NULLABLE`: the
    fields where they take it)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_never_null)
    NULLABLE: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _camel_case_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        aliases = {name: field.alias for name, field in cls.model_fields.items() if field.alias}
        renamed = {aliases.get(key, key): value for key, value in data.items()}
        if len(renamed) != len(data):
            raise ValueError("the same field is given both in camelCase and snake_case")
        nulls = [
            alias
            for name, alias in aliases.items()
            if renamed.get(alias, ...) is None and name not in cls.NULLABLE
        ]
        if nulls:
            raise ValueError(f"`{nulls[0]}` must not be null; leave it out instead")
        return renamed


Content = TypeAliasType(
    "Content",
    Annotated[
        dict[str, Any],
        Field(description="An event's `content`, ADK's (google-genai's): `role` and `parts`."),
    ],
)
