"""``Status`` objects: how the Kubernetes API reports errors."""
from __future__ import annotations

from kubernetes_mgmt_lab.kube_api.catalog import ApiKind

_REASONS = {400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden',
            404: 'NotFound', 405: 'MethodNotAllowed', 409: 'AlreadyExists',
            415: 'UnsupportedMediaType', 422: 'Invalid'}


class ApiError(Exception):
    """Raised by a handler; the server turns it into a Status reply."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.body = failure(code, message, reason, details)


def failure(code: int, message: str, reason: str | None = None,
            details: dict | None = None) -> dict:
    body = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
            'status': 'Failure', 'message': message,
            'reason': reason or _REASONS.get(code, 'InternalError'),
            'code': code}
    if details:
        body['details'] = details
    return body


def success(api_kind: ApiKind, name: str, uid: str) -> dict:
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
            'status': 'Success',
            'details': {'name': name, 'group': api_kind.group,
                        'kind': api_kind.plural, 'uid': uid}}


def resource_ref(api_kind: ApiKind) -> str:
    """``deployments.apps``, ``pods``: how messages name a resource."""
    if api_kind.group:
        return f'{api_kind.plural}.{api_kind.group}'
    return api_kind.plural


def not_found(api_kind: ApiKind, name: str) -> ApiError:
    return ApiError(404, f'{resource_ref(api_kind)} "{name}" not found',
                    details={'name': name, 'group': api_kind.group,
                             'kind': api_kind.plural})


def already_exists(api_kind: ApiKind, name: str) -> ApiError:
    return ApiError(409, f'{resource_ref(api_kind)} "{name}" already exists',
                    'AlreadyExists',
                    details={'name': name, 'group': api_kind.group,
                             'kind': api_kind.plural})
