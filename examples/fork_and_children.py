"""Forks, a child session for a sub-agent, and closing it, with the blocking client.

    python examples/fork_and_children.py

A planner asks a researcher sub-agent for a forecast through a function call; the researcher
works in a child session and, when it closes, Sessionary answers the planner's call with the
child's result. A fork tries another way from an earlier point without touching the original.
Needs `pip install ./clients/python` and a server (SESSIONARY_URL, else http://127.0.0.1:8000).
Each run makes sessions of its own (or give the planner's id as its argument).
"""

import json
import sys
import uuid

from sessionary_client import SessionaryClient


def text(author: str, said: str) -> dict[str, object]:
    role = "user" if author == "user" else "model"
    return {"author": author, "content": {"role": role, "parts": [{"text": said}]}}


def main(session_id: str) -> None:
    with SessionaryClient() as sessionary:
        planner = sessionary.session("examples", "ada", session_id)
        sessionary.create_session("examples", "ada", session_id=session_id)
        planner.append_event(text("user", "Plan a weekend in Bergen"))
        planner.append_event(text("planner", "First, the weather."))
        call = {"id": "call-forecast", "name": "researcher", "args": {"city": "Bergen"}}
        planner.append_event(
            {"author": "planner", "content": {"role": "model", "parts": [{"functionCall": call}]}}
        )

        # The researcher works in a child session made for that call...
        child = planner.create_child(
            session_id=f"{session_id}-research", function_call_id=call["id"]
        )
        research = sessionary.session("examples", "ada", child["id"])
        research.append_event(text("researcher", "Rain on Saturday, sun on Sunday."))
        # ...and closing it answers the call in the planner's session.
        research.close("completed", result={"forecast": "rain, then sun"})
        answer = planner.list_events(order="desc", page_size=1)["events"][0]
        print("planner got:", json.dumps(answer["content"]["parts"][0]["functionResponse"]))
        print("open calls:", [c["id"] for c in planner.list_tool_calls(status="pending")])

        # A fork from before the weather question tries another way; the original is untouched.
        fork = planner.fork(session_id=f"{session_id}-indoors", at_seq=1)
        indoors = sessionary.session("examples", "ada", fork["id"])
        indoors.append_event(text("planner", "Museums, then: KODE and Bryggens Museum."))
        print("fork sees:", [e["content"]["parts"][0].get("text") for e in indoors.get()["events"]])
        print("ancestors:", [s["id"] for s in indoors.get_lineage()])
        kinds = sorted(s["kind"] for s in planner.list_children()["sessions"])
        print("planner's children:", kinds)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else f"planner-{uuid.uuid4().hex[:8]}")
