"""Whether Heat has finished with a stack before a day-2 hook reads it.

Tacker 16's v1 heal logs a failure of its own wait for the stack update
(``heal_vnf_wait``) and goes on to ``heal_end``, which would then find
the old VM still in the stack, or half of an update. So the *_end hooks
wait for the stack to leave ``*_IN_PROGRESS`` and refuse one that Heat
left ``*_FAILED``, naming Heat's reason: nothing is changed on the
cluster, and the operation fails where the cause is.
"""
from __future__ import annotations

from heatclient import exc as heat_exc

from kubernetes_mgmt.errors import TopologyError
from kubernetes_mgmt.remote.retry import wait_until


def require_settled(heat, stack_id: str, deadline: float) -> str:
    """The stack's status once Heat is done with it (``*_COMPLETE``);
    TopologyError when Heat failed or is still busy at ``deadline``."""
    seen: list = []

    def settled() -> bool:
        try:
            stack = heat.stacks.get(stack_id)
        except heat_exc.BaseException as exc:
            raise TopologyError(f'stack {stack_id}: reading its status: '
                                f'Heat request failed: {exc}') from exc
        seen[:] = [stack]
        return not stack.stack_status.endswith('_IN_PROGRESS')

    if not wait_until(settled, deadline=deadline, first=0.5, ceiling=5.0):
        raise TopologyError(f'stack {stack_id} is still '
                            f'{seen[0].stack_status} after {deadline:g} s '
                            '([kubernetes_mgmt] stack_settle_timeout)')
    stack = seen[0]
    if stack.stack_status.endswith('_FAILED'):
        raise TopologyError(
            f'stack {stack_id} is {stack.stack_status}: '
            f'{stack.stack_status_reason}. Heat did not finish this '
            'operation\'s changes, so the cluster was left as it is; fix '
            'the cause and retry the operation')
    return stack.stack_status
