"""Reading server-sent events the way a browser's EventSource does, over real HTTP."""

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Frame:
    event: str
    data: Any
    id: int | None


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """The response's events, as they arrive; comments (heartbeats) skipped."""
    buffer = ""
    async for chunk in response.aiter_text():
        buffer += chunk
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            fields = dict(
                line.split(": ", 1) for line in block.split("\n") if not line.startswith(":")
            )
            if fields:
                position = fields.get("id")
                yield Frame(
                    fields["event"],
                    json.loads(fields["data"]),
                    None if position is None else int(position),
                )


class Reader:
    """A stream's frames, read a few at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._frames = frames(response)

    async def take(self, count: int) -> list[Frame]:
        """The next `count` frames (fewer if the stream ends first)."""
        taken: list[Frame] = []
        while len(taken) < count:
            try:
                taken.append(await anext(self._frames))
            except StopAsyncIteration:
                break
        return taken

    async def rest(self) -> list[Frame]:
        """Every frame until the server ends the stream."""
        return [frame async for frame in self._frames]
