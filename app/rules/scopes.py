"""ADK's state scoping, as pure functions: `app:` and `user:` keys are shared, `temp:` never kept.

A state delta names keys with their scope prefix (`app:theme`, `user:name`, `temp:scratch`,
`step`). Storage keeps each scope in its own row without the prefix; reads merge them back.
"""

from app.domain import ScopedDelta, StateMap

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"


def split_delta(delta: StateMap) -> ScopedDelta:
    app: StateMap = {}
    user: StateMap = {}
    session: StateMap = {}
    for key, value in delta.items():
        if key.startswith(APP_PREFIX):
            app[key.removeprefix(APP_PREFIX)] = value
        elif key.startswith(USER_PREFIX):
            user[key.removeprefix(USER_PREFIX)] = value
        elif not key.startswith(TEMP_PREFIX):
            session[key] = value
    return ScopedDelta(app=app, user=user, session=session)


def merge_deltas(deltas: list[ScopedDelta]) -> ScopedDelta:
    """Several deltas applied in order equal their top-level merge (later keys win)."""
    merged = ScopedDelta()
    for delta in deltas:
        merged.app.update(delta.app)
        merged.user.update(delta.user)
        merged.session.update(delta.session)
    return merged


def without_temp(delta: StateMap) -> StateMap:
    """The delta as it is stored in an event: `temp:` keys live only for one invocation."""
    return {key: value for key, value in delta.items() if not key.startswith(TEMP_PREFIX)}


def merged_state(session: StateMap, app: StateMap, user: StateMap) -> StateMap:
    """What a reader sees: session keys as stored, app and user keys with their prefixes."""
    return {
        **session,
        **{APP_PREFIX + key: value for key, value in app.items()},
        **{USER_PREFIX + key: value for key, value in user.items()},
    }
