"""Requests, routes and errors shared by the three emulated services."""
from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Call:
    """One request, as a handler sees it."""

    method: str
    path: str                   # below the service's prefix
    query: dict[str, list[str]]
    body: Any
    token: str
    base_url: str               # scheme://host:port of this server
    args: dict[str, str] = field(default_factory=dict)   # from the route
    headers: dict[str, str] = field(default_factory=dict)
    admin: bool = True          # the token has Keystone's admin role

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else default

    def member(self, key: str) -> dict:
        """The body's one member ``key`` (``{"server": {...}}``)."""
        if not isinstance(self.body, dict) or not isinstance(
                self.body.get(key), dict):
            raise ApiError(400, 'badRequest',
                           f'the body must be a JSON object with a '
                           f'"{key}" object')
        return self.body[key]


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def not_found(what: str, ident: str, kind: str = 'itemNotFound'
              ) -> ApiError:
    return ApiError(404, kind, f'{what} {ident} could not be found.')


Handler = Callable[[Call], Reply]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern
    handler: Handler


def route(method: str, template: str, handler: Handler) -> Route:
    """``/servers/{id}`` matches one path segment per ``{name}``."""
    regex = re.sub(r'\{(\w+)\}', r'(?P<\1>[^/]+)', template)
    return Route(method, re.compile(f'^{regex}/?$'), handler)


def dispatch(routes: list[Route], call: Call) -> Reply:
    allowed = False
    for r in routes:
        match = r.pattern.match(call.path)
        if match is None:
            continue
        if r.method != call.method:
            allowed = True
            continue
        call.args = match.groupdict()
        return r.handler(call)
    if allowed:
        raise ApiError(405, 'methodNotAllowed',
                       f'{call.method} is not allowed on {call.path}')
    raise ApiError(404, 'itemNotFound',
                   f'the lab does not serve {call.method} {call.path}')


def new_id() -> str:
    return str(uuid.uuid4())


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def filtered(items: list[dict], call: Call,
             keys: tuple[str, ...]) -> list[dict]:
    """``items`` matching every query filter named in ``keys`` (a filter
    given several times matches any of its values, as Neutron does)."""
    for key in keys:
        wanted = call.query.get(key)
        if wanted:
            items = [i for i in items if str(i.get(key)) in wanted]
    return items
