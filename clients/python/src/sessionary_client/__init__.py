"""sessionary-client: typed sync and async clients for the Sessionary session store."""

from sessionary_client._async_client import AsyncSessionaryClient
from sessionary_client._sync_client import SessionaryClient
from sessionary_client.errors import (
    APIError,
    ConflictError,
    EventConflictError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    ServiceUnavailableError,
    SessionAlreadyExistsError,
    SessionaryError,
    SessionClosedError,
    SessionNotFoundError,
    StaleSessionError,
    ToolCallsPendingError,
    ToolPairViolationError,
)
from sessionary_client.models import (
    ContextView,
    Event,
    EventPage,
    Order,
    Parent,
    Session,
    SessionPage,
    State,
    ToolCall,
)

__all__ = [
    "APIError",
    "AsyncSessionaryClient",
    "ConflictError",
    "ContextView",
    "Event",
    "EventConflictError",
    "EventPage",
    "InvalidRequestError",
    "NotFoundError",
    "Order",
    "Parent",
    "PayloadTooLargeError",
    "ServiceUnavailableError",
    "Session",
    "SessionAlreadyExistsError",
    "SessionClosedError",
    "SessionNotFoundError",
    "SessionPage",
    "SessionaryClient",
    "SessionaryError",
    "StaleSessionError",
    "State",
    "ToolCall",
    "ToolCallsPendingError",
    "ToolPairViolationError",
]
