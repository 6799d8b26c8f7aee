"""CORS: Starlette's, with a refused preflight answered as problem+json like every other
refusal, rather than as its plain text."""

import json

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response

from app.errors import PROBLEM_JSON, CorsPreflightRefused


class ProblemCORSMiddleware(CORSMiddleware):
    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code == 200:
            return response
        # Starlette's answer names what it refused: `Disallowed CORS origin, headers`.
        refused = bytes(response.body).decode().removeprefix("Disallowed CORS ").split(", ")
        asked = {
            "origin": f"origin {request_headers['origin']!r}, not one of SESSIONARY_CORS_ORIGINS",
            "method": f"method {request_headers['access-control-request-method']!r}",
            "headers": f"headers {request_headers.get('access-control-request-headers')!r}",
            "private-network": "access to a private network",
        }
        error = CorsPreflightRefused(
            "This server does not allow this cross-origin request: its "
            + "; its ".join(asked.get(what, what) for what in refused)
            + "."
        )
        response.body = json.dumps(error.problem_body()).encode()
        response.headers["Content-Type"] = PROBLEM_JSON
        response.headers["Content-Length"] = str(len(response.body))
        return response
