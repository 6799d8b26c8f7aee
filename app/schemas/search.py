"""Search results on the wire."""

from pydantic import Field

from app.schemas.base import WireModel


class SearchHit(WireModel):
    user_id: str
    session_id: str
    seq: int
    event_id: str
    author: str | None
    timestamp: float
    rank: float = Field(description="How well the event matches (`ts_rank`): higher is better.")
    snippet: str = Field(
        description="Up to two fragments of the event's text around the matches: HTML-escaped, "
        "each match in `<mark>…</mark>`."
    )


class SearchPage(WireModel):
    hits: list[SearchHit] = Field(description="Best match first.")
    next_page_token: str | None
