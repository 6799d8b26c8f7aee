"""The audit log on the wire."""

from pydantic import Field

from app.schemas.base import WireModel
from app.schemas.genai import JsonObject


class AuditRecord(WireModel):
    seq: int = Field(description="Its place in the log: later records have larger ones.")
    time: float = Field(description="When (epoch seconds).")
    action: str = Field(
        description="`session.delete`, `session.import`, `key.create`, `key.revoke`, "
        "`retention.sweep`, `user.erase`, …"
    )
    key_id: str | None = Field(
        description="The id of the API key that asked (never its secret); null with keys off, "
        "and for the command line and the sweeper."
    )
    app_name: str | None
    user: str | None = Field(
        description="The user, as a pseudonym: a keyed hash of the app and the user id."
    )
    detail: JsonObject = Field(
        description="What: ids (sessions as keyed hashes) and counts, never content."
    )
    outcome: str = Field(description="`ok`, or how it failed.")


class AuditPage(WireModel):
    records: list[AuditRecord] = Field(description="Newest first.")
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")
