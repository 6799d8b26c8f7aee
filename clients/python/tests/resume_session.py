"""A second process resuming a session from Sessionary with a fresh Runner; prints what it saw.

Usage: python resume_session.py BASE_URL APP_NAME USER_ID SESSION_ID MESSAGE
"""

import asyncio
import json
import sys

from google.adk.runners import Runner
from scripted_agent import build_agent, user_message
from sessionary_client.adk import SessionaryService


async def main(base_url: str, app_name: str, user_id: str, session_id: str, text: str) -> None:
    service = SessionaryService(base_url)
    runner = Runner(agent=build_agent(), app_name=app_name, session_service=service)
    before = await service.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
    assert before is not None, "the session was not found"
    async for _ in runner.run_async(
        user_id=user_id, session_id=session_id, new_message=user_message(text)
    ):
        pass
    after = await service.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
    assert after is not None
    await service.close()
    print(
        json.dumps(
            {
                "before": before.model_dump(mode="json", by_alias=True, exclude_none=True),
                "after": after.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
