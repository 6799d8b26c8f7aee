"""The door every API request passes before its route runs: key first, then strict input.

FastAPI would otherwise parse and validate the query and body before any dependency, so a
caller without a key would be told what is wrong with its input; and it would ignore unknown
query parameters, accept bodies that are not JSON, and let Python's JSON parser guess at
duplicate keys or NaN.

Only FastAPI's public API is used here, with a route's `dependant` tree (each node's `call`
and `dependencies`: `DependencyTree`) for the access rules it declares. Which query parameters
a route binds, and the binding of a plain route's parameters past FastAPI's own binder, are
`app.api.fastapi_binding`: the one module that uses FastAPI's private names.
"""

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol
from urllib.parse import urlencode

from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic.alias_generators import to_camel
from starlette.convertors import Convertor, register_url_convertor

from app import strict_json
from app.api.deps import Authorized, Public, authorize

# Looked up here as each route's handler is built: a test puts FastAPI's own handler back.
from app.api.fastapi_binding import plain_handler as _plain_handler
from app.api.fastapi_binding import query_names
from app.errors import InvalidInput, UnsupportedMediaType
from app.limits import MEMORY_VERB, SESSION_VERBS, USER_VERBS
from app.services.auth import Need


class SessionIdConvertor(Convertor[str]):
    """A session id in a path never ends in a verb of the session paths (`x:fork`): a verb
    suffix is matched before an id (DESIGN §6), so `POST …/sessions/x:fork` forks `x`, and
    `GET` there is a 405 that allows only `POST` rather than a read of a session `x:fork`."""

    regex = "[^/]+" + "".join(f"(?<!:{verb})" for verb in SESSION_VERBS)

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("session", SessionIdConvertor())


class MemoryIdConvertor(SessionIdConvertor):
    """A memory id in a path never ends in `:rollback`, the verb of its path: `GET` there is
    a 405 that allows only `POST`, not a read of a memory `x:rollback`."""

    regex = f"[^/]+(?<!:{MEMORY_VERB})"


register_url_convertor("memory", MemoryIdConvertor())


class UserIdConvertor(SessionIdConvertor):
    """A user id in a path never ends in `:export` or `:import`, the verbs of a user's path:
    `DELETE …/users/x:export` is a 405, not an erase of a user `x:export`."""

    regex = "[^/]+" + "".join(f"(?<!:{verb})" for verb in USER_VERBS)


register_url_convertor("user", UserIdConvertor())


class ArtifactNameConvertor(Convertor[str]):
    """An artifact's name in a path, followed by `/versions…`: the rest of the path up to it
    (a name may hold `/`), whatever its characters, so that the name's own rules judge a bad
    one (422), not the router (404)."""

    regex = "(?s:.+)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


class LastArtifactNameConvertor(ArtifactNameConvertor):
    """An artifact's name that ends the path: never one that ends in `/versions` or
    `/versions/{v}` (names ADK refuses), which are the versions' own paths, so that a `POST`
    there is a 405 rather than a save under that name."""

    regex = r"(?s:(?!.*/versions(?:/[^/]*)?$).+)"


register_url_convertor("artifact_name", ArtifactNameConvertor())
register_url_convertor("artifact", LastArtifactNameConvertor())
# The path of one session, for the routes' paths: `{session_id}` with its convertor.
SESSION_PATH = "/apps/{app_name}/users/{user_id}/sessions/{session_id:session}"


# The whitespace JSON allows around a value (RFC 8259).
_JSON_SPACE = b" \t\r\n"


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            max_depth = self.app.state.settings.max_json_depth
            self._json = strict_json.loads(await self.body(), max_depth=max_depth)
        return self._json


def _has_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return length != "0" if length is not None else "transfer-encoding" in request.headers


def _is_json(content_type: str) -> bool:
    media_type = content_type.split(";")[0].strip().lower()
    return media_type == "application/json" or media_type.endswith("+json")


class DependencyTree(Protocol):
    """What the access checks read of a route's `dependant` (FastAPI's `Dependant`, which mypy
    checks against this): each node's callable and the dependencies below it."""

    @property
    def call(self) -> Callable[..., Any] | None: ...

    @property
    def dependencies(self) -> Sequence["DependencyTree"]: ...


def declared_needs(dependant: DependencyTree) -> tuple[Need, ...]:
    """The access rules a route declares, its router's and its dependencies' included."""
    own = (dependant.call.need,) if isinstance(dependant.call, Authorized) else ()
    return own + tuple(need for sub in dependant.dependencies for need in declared_needs(sub))


def declares_reading(dependant: DependencyTree) -> bool:
    """Whether the route only reads, whatever its method (a POST whose body is a question)."""
    return (isinstance(dependant.call, Authorized) and dependant.call.reads) or any(
        declares_reading(sub) for sub in dependant.dependencies
    )


def declares_public(dependant: DependencyTree) -> bool:
    return isinstance(dependant.call, Public) or any(
        declares_public(sub) for sub in dependant.dependencies
    )


def unguarded_routes(app: FastAPI) -> list[str]:
    """Routes that declare no access rule, neither `authorized(…)` nor `PUBLIC`.

    FastAPI's own documentation routes are public by nature; anything else must say who may
    call it, so that forgetting to is an error at start-up rather than an open door.
    """
    docs = {app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url}
    unguarded = []
    for context in iter_route_contexts(app.router.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            if not (declared_needs(route.dependant) or declares_public(route.dependant)):
                unguarded.append(f"{sorted(route.methods or ())} {route.path}")
        elif getattr(route, "path", None) not in docs:
            unguarded.append(f"{route!r}")
    return unguarded


# Headers that decide what a request does; sent twice, which one counts would be a guess.
SINGLE_VALUED_HEADERS = frozenset({b"authorization", b"if-match", b"content-type"})


def _repeated_headers(request: Request) -> list[str]:
    seen: set[bytes] = set()
    repeated = []
    for name, _ in request.scope["headers"]:
        if name in SINGLE_VALUED_HEADERS:
            if name in seen:
                repeated.append(name.decode())
            seen.add(name)
    return repeated


def _sent_twice(name: str) -> InvalidInput:
    return InvalidInput(f"The header {name!r} is given more than once; send it once.", field=name)


def _check_query(request: Request, known: frozenset[str], repeatable: frozenset[str]) -> None:
    """Query names are camelCase like the JSON; snake_case ones are read as their camelCase
    selves, as in bodies. A name the route does not know is refused, and so is a name given
    twice that takes one value: as with duplicate JSON keys, the last one does not silently
    win."""
    items = request.query_params.multi_items()
    unknown = sorted(
        {name for name, _ in items if name not in known and to_camel(name) not in known}
    )
    if unknown:
        accepted = ", ".join(sorted(known)) or "none"
        raise InvalidInput(
            f"Unknown query parameter {unknown[0]!r}; this endpoint takes: {accepted}.",
            field=unknown[0],
        )
    names = [name if name in known else to_camel(name) for name, _ in items]
    repeated = next(
        (name for name in names if name not in repeatable and names.count(name) > 1), None
    )
    if repeated is not None:
        raise InvalidInput(f"Query parameter {repeated!r} is given more than once.", field=repeated)
    if names != [name for name, _ in items]:
        renamed = list(zip(names, (value for _, value in items), strict=True))
        request.scope["query_string"] = urlencode(renamed).encode()


class StrictRoute(APIRoute):
    """Checks, in this order: the API key against the route's `Authorized` rules (401/403);
    headers that must come once but came twice (422, a repeated `Authorization` even before
    the key); query parameters it does not know (422: a typo like `numRecentEvent=5` must not
    return every event); a body where the route takes none (422); a body that is not JSON
    (415); JSON that `app.strict_json` refuses (422)."""

    # Whether the route's parameters are bound by `app.api.fastapi_binding.plain_handler`, set
    # with its handler.
    binds_plainly = False

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        plain = _plain_handler(self)
        self.binds_plainly = plain is not None
        handler = plain or super().get_route_handler()
        needs = declared_needs(self.dependant)
        reads = declares_reading(self.dependant)
        # A body the route would ignore is a mistake (options it does not have): refused.
        takes_body = self.body_field is not None or "requestBody" in (self.openapi_extra or {})
        known_query = query_names(self.dependant)
        repeatable_query = query_names(self.dependant, repeatable=True)

        async def strict_handler(request: Request) -> Response:
            repeated = _repeated_headers(request)
            if "authorization" in repeated:
                raise _sent_twice("authorization")
            if needs:
                await authorize(request, needs, reads=reads)
            if repeated:
                raise _sent_twice(repeated[0])
            if request.scope["query_string"]:
                _check_query(request, known_query, repeatable_query)
            request = StrictJSONRequest(request.scope, request.receive)
            if _has_body(request):
                if not takes_body:
                    raise InvalidInput(
                        f"{request.method} {self.path_format} takes no request body; send none.",
                        field="body",
                    )
                if self.body_field is not None and not _is_json(
                    request.headers.get("content-type", "")
                ):
                    raise UnsupportedMediaType(
                        "Send the body as JSON, with the header Content-Type: application/json."
                    )
                # FastAPI reads `null` as no body at all: `:reset` would then empty the
                # session, create make one with defaults. A client that sent null meant
                # something else, so it is refused rather than guessed at.
                if (
                    self.body_field is not None
                    and (await request.body()).strip(_JSON_SPACE) == b"null"
                ):
                    raise InvalidInput(
                        f"The body of {request.method} {self.path_format} is JSON null; send "
                        "an object, or no body at all.",
                        field="body",
                    )
            return await handler(request)

        return strict_handler
