"""Follow a session as it is written, like `tail -f`: each event as it is committed, from the
start (or from `--after SEQ`), until the session is closed or deleted.

    python examples/live_tail.py SESSION_ID [--app APP] [--user USER] [--after SEQ]

The stream resumes by itself after a lost connection, from the last event it printed, so
nothing is missed or printed twice. Needs `pip install ./clients/python` and a server
(SESSIONARY_URL, else http://127.0.0.1:8000).
"""

import argparse
import sys

from sessionary_client import SessionaryClient, SessionNotFoundError


def describe(event: dict[str, object]) -> str:
    """One line for an event: its text, or the calls and answers it carries."""
    content = event.get("content")
    parts = content.get("parts", []) if isinstance(content, dict) else []
    said = [
        part.get("text")
        or ("call " + part["functionCall"]["name"] if "functionCall" in part else None)
        or (
            "answer " + str(part["functionResponse"].get("id"))
            if "functionResponse" in part
            else ""
        )
        for part in parts
    ]
    return f"{event['seq']:>5} {event.get('author')}: {' | '.join(said)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session_id")
    parser.add_argument("--app", default="examples")
    parser.add_argument("--user", default="ada")
    parser.add_argument("--after", type=int, default=0, help="the seq to start after (0: all)")
    args = parser.parse_args()
    with SessionaryClient() as sessionary:
        changes = sessionary.stream_events(
            args.app, args.user, args.session_id, after_seq=args.after
        )
        try:
            for change in changes:
                if change.event == "appended":
                    print(describe(change.data), flush=True)
                else:
                    print(f"      ({change.event})", flush=True)
        except SessionNotFoundError as error:
            sys.exit(error.detail)


if __name__ == "__main__":
    main()
