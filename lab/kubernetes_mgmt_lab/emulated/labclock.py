"""The lab's clock: the machine's, moved ahead by the lab's configured
``clock_offset`` (``config.set_clock_offset``). What judges or issues the
cluster's certificates reads it, so a test can age them."""
from __future__ import annotations

import datetime

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kubernetes_mgmt_lab.emulated.runner import Context


def offset(ctx: Context) -> float:
    return float(ctx.config.clock_offset or 0.0)


def now(ctx: Context) -> datetime.datetime:
    """The lab's time, timezone-aware (UTC)."""
    return datetime.datetime.now(datetime.timezone.utc) + \
        datetime.timedelta(seconds=offset(ctx))
