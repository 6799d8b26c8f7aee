"""What the API key of a request may do, on the wire."""

from pydantic import Field

from app.schemas.base import WireModel


class KeyScope(WireModel):
    """The scope of the request's API key: which apps and users it reaches, and whether it may
    write. With keys off (`authEnabled: false`) every request reaches everything."""

    auth_enabled: bool = Field(
        description="Whether this server checks API keys. false: every request may read and "
        "write every session, and the fields below say so."
    )
    key_id: str | None = Field(
        description="The key's id, as `sessionary keys list` shows it; null with keys off."
    )
    app_name: str | None = Field(description="The one app the key reaches; null: every app.")
    user_id: str | None = Field(
        description="The one user of that app the key reaches; null: every user."
    )
    read_only: bool = Field(description="Whether the key may only read.")
    writes_app_state: bool = Field(
        description="Whether it may write `app:` state, which every user's sessions show."
    )
