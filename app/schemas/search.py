"""Search results on the wire."""

from pydantic import Field

from app import domain
from app.schemas.base import WireModel, wire_model

SearchHit = wire_model(
    domain.SearchHit,
    rank="How well the event matches (`ts_rank`): higher is better.",
    snippet="Up to two fragments of the event's text around the matches: HTML-escaped, each "
    "match in `<mark>…</mark>`.",
)


class SearchPage(WireModel):
    hits: list[SearchHit] = Field(description="Best match first.")  # type: ignore[valid-type]
    next_page_token: str | None = Field(description="Pass as `pageToken` for the next page.")
