"""The Ready condition of a Kubernetes object (a Node, a Pod), as the API
server reports it: the one place that reads it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def is_ready(obj: Mapping[str, Any]) -> bool:
    """True when ``status.conditions`` holds ``Ready`` = ``True``."""
    conditions = (obj.get('status') or {}).get('conditions') or []
    return any(isinstance(c, Mapping) and c.get('type') == 'Ready'
               and c.get('status') == 'True' for c in conditions)
