"""The audit log's names for people: a keyed hash (HMAC-SHA-256 under the server's audit
secret) of an app's user id, so that a record names a user without holding their id, and a
query by the id finds their records by hashing it the same way."""

import hashlib
import hmac

# Hex characters of a pseudonym: 128 bits, unique among any number of users.
PSEUDONYM_LENGTH = 32


def pseudonym(secret: bytes, app_name: str, user_id: str) -> str:
    """The user's name in the audit log; the app is part of it, as user ids are per app."""
    said = f"{app_name}\x00{user_id}".encode()
    return hmac.new(secret, said, hashlib.sha256).hexdigest()[:PSEUDONYM_LENGTH]
