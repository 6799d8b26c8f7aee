"""The ADK services used as ADK's own are, never closed: from `asyncio.run` twice, a loop left
open, a loop closed by hand, and a service made in a run and dropped there, then collected.

    SESSIONARY_URL=… python unclosed_services.py APP

Prints whether memory recalls each turn's words after it; it must end without a word on stderr.
"""

import asyncio
import gc
import sys

from google.adk.events.event import Event
from google.genai import types
from sessionary_client.adk import SessionaryMemoryService, SessionaryService

APP = sys.argv[1]
sessions = SessionaryService()
memory = SessionaryMemoryService()


async def turn(said: str, service: SessionaryService = sessions) -> None:
    session = await service.create_session(app_name=APP, user_id="ada")
    content = types.Content(role="user", parts=[types.Part(text=said)])
    await service.append_event(session, Event(author="user", content=content))
    await memory.add_session_to_memory(session)
    recalled = await memory.search_memory(app_name=APP, user_id="ada", query=said)
    print(said, content in [entry.content for entry in recalled.memories])


async def with_a_service_of_its_own(said: str) -> None:
    await turn(said, SessionaryService())
    gc.collect()
    await asyncio.sleep(0.1)  # its connections close in this loop


asyncio.run(turn("oslo"))
asyncio.run(turn("bergen"))
asyncio.run(with_a_service_of_its_own("tromso"))
closed_by_hand = asyncio.new_event_loop()
closed_by_hand.run_until_complete(turn("narvik"))
closed_by_hand.close()
left_open = asyncio.new_event_loop()
left_open.run_until_complete(turn("bodo"))
