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
    SessionNotFoundError,
    StaleSessionError,
)
from sessionary_client.models import Event, EventPage, Order, Session, SessionPage, State

__all__ = [
    "APIError",
    "AsyncSessionaryClient",
    "ConflictError",
    "Event",
    "EventConflictError",
    "EventPage",
    "InvalidRequestError",
    "NotFoundError",
    "Order",
    "PayloadTooLargeError",
    "ServiceUnavailableError",
    "Session",
    "SessionAlreadyExistsError",
    "SessionNotFoundError",
    "SessionPage",
    "SessionaryClient",
    "SessionaryError",
    "StaleSessionError",
    "State",
]
