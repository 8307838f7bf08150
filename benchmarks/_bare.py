"""The reference apps ``benchmarks.http`` compares Fortemi with.

Both are served like Fortemi: a Starlette app with the endpoint at ``POST /graphql``.

* :func:`strawberry_app`: a one-field Strawberry schema (``{ hello }``) behind strawberry's
  ASGI view, with the same parser and validation caches (and cache size) Fortemi uses, and
  nothing else: no authentication, no other extensions, no middleware.
* :func:`starlette_app`: a plain Starlette endpoint that parses the JSON body and answers
  a fixed JSON document: the ceiling for any GraphQL app on this HTTP stack.
"""

from __future__ import annotations

from functools import partial

import strawberry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from strawberry.asgi import GraphQL
from strawberry.extensions import ParserCache, ValidationCache

__all__ = ["starlette_app", "strawberry_app"]


@strawberry.type
class Query:
    @strawberry.field
    def hello(self) -> str:
        return "world"


def strawberry_app(cache_size: int) -> Starlette:
    schema = strawberry.Schema(
        query=Query,
        extensions=[
            partial(ParserCache, maxsize=cache_size),
            partial(ValidationCache, maxsize=cache_size),
        ],
    )
    view: GraphQL[None, None] = GraphQL(schema, graphql_ide=None, allow_queries_via_get=False)
    return Starlette(routes=[Route("/graphql", view)])


def starlette_app() -> Starlette:
    async def endpoint(request: Request) -> Response:
        await request.json()
        return JSONResponse({"data": {"hello": "world"}})

    return Starlette(routes=[Route("/graphql", endpoint, methods=["POST"])])
