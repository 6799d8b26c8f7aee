"""An erase of a user, or of an app, on the wire."""

from typing import Literal

from pydantic import Field

from app.schemas.base import WireModel


class Erasure(WireModel):
    id: str = Field(description="The erase's id, as the audit log names it.")
    app_name: str
    user_id: str = Field(description="The user, as asked for (the server keeps no copy).")
    status: Literal["running", "done"] = Field(
        description="`running`: the user's writes are refused (409 `user_erasing`) and what "
        "is left is being deleted; `done`: nothing of the user is left."
    )
    removed: dict[str, int] = Field(
        description="Rows removed so far, by kind: `sessions`, `events`, `pendingEvents`, "
        "`userStates`, `memories`, `memoryRevisions`, `memoryVectors`, `artifacts`, "
        "`artifactVersions`, `artifactBlobs`, `artifactChunks`, `apiKeys`, and any other "
        "table holding users' rows."
    )
    deleted_key_ids: list[str] = Field(description="The ids of the user's API keys, deleted.")
    create_time: float = Field(description="When the erase started (epoch seconds).")
    update_time: float = Field(description="When it last moved (epoch seconds).")
    finish_time: float | None = Field(description="When it was done; null while it runs.")


class AppErasure(WireModel):
    id: str = Field(description="The erase's id, as the audit log names it.")
    app_name: str
    status: Literal["running", "done"] = Field(
        description="`running`: writes that make something of the app are refused (409 "
        "`app_erasing`) and what is left is being deleted; `done`: nothing of the app is left."
    )
    removed: dict[str, int] = Field(
        description="Rows removed so far, by kind: those of `Erasure.removed`, for every user, "
        "and `appStates`."
    )
    deleted_key_ids: list[str] = Field(
        description="The ids of the API keys made for the app and its users, deleted."
    )
    create_time: float = Field(description="When the erase started (epoch seconds).")
    update_time: float = Field(description="When it last moved (epoch seconds).")
    finish_time: float | None = Field(description="When it was done; null while it runs.")
