"""The Runner tests' agent is the ADK example's: a scripted model (no network) and one tool."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[3] / "examples"))

from adk_agent import build_agent, remember, user_message

__all__ = ["build_agent", "remember", "user_message"]
