"""Forks and child sessions on the wire."""

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator
from typing_extensions import TypeAliasType

from app.limits import ID_LENGTH
from app.schemas.base import ControlBody, NewSessionId, Seq, State
from app.schemas.sessions import Outcome

Inherit = TypeAliasType("Inherit", Literal["none", "all", "context"])


class SessionFork(ControlBody):
    """Where to fork; with neither `atSeq` nor `beforeInvocationId`, at the end."""

    session_id: NewSessionId | None = None
    at_seq: Seq | None = Field(
        default=None, description="The fork holds the events with `seq` ≤ this (0: none)."
    )
    before_invocation_id: str | None = Field(
        default=None,
        description="The fork holds the events before the first event of this invocation.",
    )

    @model_validator(mode="after")
    def _one_point(self) -> "SessionFork":
        if self.at_seq is not None and self.before_invocation_id is not None:
            raise ValueError("give atSeq or beforeInvocationId, not both")
        return self


class ChildCreate(ControlBody):
    session_id: NewSessionId | None = None
    state: State | None = Field(
        default=None,
        description="Initial state, over what `inherit` brings. `app:` and `user:` keys merge "
        "into shared state; `temp:` keys are dropped.",
    )
    function_call_id: (
        Annotated[str, StringConstraints(min_length=1, max_length=ID_LENGTH)] | None
    ) = Field(
        default=None,
        description="A `functionCall` of the parent, not yet answered, that this child "
        "works on: closing the child appends the call's `functionResponse` to the parent.",
    )
    inherit: Inherit = Field(
        default="none",
        description="What the child starts with: `none`, nothing; `all`, the parent's events "
        "(same ids and seqs) and session state; `context`, the parent's live events (rewound "
        "ones left out, as ADK's `_apply_rewinds` does) and session state.",
    )


class SessionClose(ControlBody):
    outcome: Outcome
    result: Any = Field(
        default=None,
        description="Any JSON: for a child made for a function call, the call's result.",
    )
