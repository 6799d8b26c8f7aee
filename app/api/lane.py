"""The fast path past FastAPI's dispatch: appends (`POST …/sessions/{id}/events`, and
`…/events:batch`) handed straight to their routes' handlers.

Appends are most of a session store's traffic, and FastAPI's dispatch in front of a handler
(its exception and exit-stack layers, then every included router tried in turn, the one that
holds the route matched twice) is a measurable share of an append's CPU: bench/README.md ("How
it got here") has the figures, `python -m bench.inprocess` with the lane on and off in
alternating rounds. The route is still declared on its router, so its OpenAPI description is
the same, and the handler the lane calls is the route's own (`StrictRoute`: the key, strict
input, one validation): what the lane leaves out is only the search for it.

The one module that bypasses the dispatch. It uses no private name, but relies on what
FastAPI's and Starlette's dispatch do, and so on FastAPI and Starlette held below their next
minor versions (pyproject.toml); tests/test_fast_paths.py checks each of these:
- a route bound by `app.api.fastapi_binding` needs none of the exit stacks FastAPI's dispatch
  opens (`binds_plainly`; any other route is refused a lane);
- `APIRoute.matches` gives the child scope routing would set (`route`, `endpoint`,
  `path_params`);
- Starlette gives the handler of `500` and `Exception` to its outermost middleware and every
  other one to `ExceptionMiddleware`, which the lane stands in for.
"""

import inspect
from collections.abc import Sequence

from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.routing import StrictRoute


class AppendLane:
    """Pure ASGI, innermost of the app's middleware: everything outside it (the request id,
    the access line and metrics, CORS, the path and body guards) applies to appends as to any
    request. Errors go to the app's exception handlers, as FastAPI's dispatch sends them."""

    def __init__(self, app: ASGIApp, api: FastAPI, route_names: Sequence[str]) -> None:
        # Built with the middleware stack, at the first request: the routes are all there.
        self.app = app
        named = {
            getattr(context.original_route, "name", None): context.original_route
            for context in iter_route_contexts(api.router.routes)
        }
        self.routes = []
        for name in route_names:
            route = named[name]
            assert isinstance(route, StrictRoute)
            if not route.binds_plainly:
                # FastAPI's own binder needs the exit stacks its dispatch opens.
                raise RuntimeError(f"{name} takes more than plain parameters: no lane for it")
            self.routes.append((route, route.get_route_handler()))
        # As Starlette splits them: the handler of `Exception` answers outside all middleware,
        # so that an unexpected error is still a problem+json 500 with its request id.
        self.error_handlers = {
            kind: handler
            for kind, handler in api.exception_handlers.items()
            if kind not in (500, Exception)
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            for route, handler in self.routes:
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    scope.update(child_scope)  # route, endpoint, path_params: as routing sets
                    request = Request(scope, receive)
                    try:
                        response = await handler(request)
                    except Exception as error:
                        response = await self._rendered(request, error)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _rendered(self, request: Request, error: Exception) -> Response:
        """The answer of the app's handler for this kind of error; an error none of them
        takes goes on up, to the handler of `Exception`."""
        for kind in type(error).__mro__:
            if kind in self.error_handlers:
                answer = self.error_handlers[kind](request, error)
                return await answer if inspect.isawaitable(answer) else answer
        raise error
