"""kubeadm's etcd work on a control-plane node, against the cluster's
real etcd: a join adds this node as a learner through a serving member,
starts it (initial-cluster-state=existing) and promotes it once it has
caught up (kubeadm's learner mode, the default since 1.32); a reset
removes this node's own member through its own etcd."""
from __future__ import annotations

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import etcd_server, store
from kubernetes_mgmt_lab.emulated import kubeadm_cli as kcli
from kubernetes_mgmt_lab.emulated import kubeadm_common as common
from kubernetes_mgmt_lab.emulated.etcd_gateway import EtcdError, Gateway
from kubernetes_mgmt_lab.emulated.etcd_mirror import endpoints
from kubernetes_mgmt_lab.emulated.runner import Context, checkpoint

PHASE = 'control-plane-join/etcd'
PROMOTE_TIMEOUT = 40.0      # kubeadm: "This can take up to 40s"


def cluster_gateway(cluster_dir: str) -> Gateway:
    return Gateway(cluster_dir, endpoints(store.read(cluster_dir)))


def members(cluster_dir: str) -> list[dict]:
    """The members, as any serving member lists them ([] without one)."""
    gateway = cluster_gateway(cluster_dir)
    try:
        return gateway.members() if gateway.endpoints else []
    except EtcdError:
        return []
    finally:
        gateway.close()


def peer_taken(cluster_dir: str, ip: str) -> bool:
    peer = etcd_server.peer_url(ip)
    return any(peer in m['peerURLs'] for m in members(cluster_dir))


def join(ctx: Context, name: str, ip: str) -> None:
    gateway = cluster_gateway(ctx.cluster_dir)
    try:
        _join(ctx, gateway, name, ip)
    except EtcdError as e:
        raise kcli.fail(PHASE, f'error creating local etcd static pod '
                        f'manifest file: {e.message}') from None
    finally:
        gateway.close()


# etcd refuses a membership change until every voting member has been
# connected for 5 s (its strict reconfiguration check); kubeadm retries.
RETRIED = ('unhealthy cluster', 'in sync', 'not started', 'timed out')
RETRY_TIMEOUT = 30.0


def _retried(call):
    """``call()``'s result, retried while etcd says "not now"."""
    result: list = []

    def attempt() -> bool:
        try:
            result.append(call())
        except EtcdError as e:
            if any(word in e.message for word in RETRIED):
                last[:] = [e]
                return False
            raise
        return True

    last: list[EtcdError] = []
    if not wait_until(attempt, deadline=RETRY_TIMEOUT, first=0.2,
                      ceiling=1.0):
        raise last[0]
    return result[0]


def _join(ctx: Context, gateway: Gateway, name: str, ip: str) -> None:
    peer = etcd_server.peer_url(ip)
    member_id = _retried(lambda: gateway.member_add([peer], learner=True))
    ctx.out('[etcd] Announced new etcd member joining to the existing '
            'etcd cluster')
    initial = {m['name']: m['peerURLs'][0] for m in gateway.members()
               if m['name'] and m['peerURLs']}
    initial[name] = peer
    # Fault stage: the join dies with the member added, not started.
    checkpoint(ctx, 'etcd-member')
    common.start_etcd(ctx, etcd_server.command(name, ip, initial, True),
                      phase=PHASE, wait_healthy=False)
    ctx.out('[etcd] Waiting for the new etcd member to join the cluster. '
            'This can take up to 40s')
    _retried(lambda: _promote(gateway, member_id))
    local = Gateway(ctx.cluster_dir, [etcd_server.client_url(ip)])
    try:
        if not wait_until(local.healthy, deadline=PROMOTE_TIMEOUT,
                          first=0.05, ceiling=0.5):
            raise kcli.fail(PHASE, 'etcd cluster is not healthy')
    finally:
        local.close()


def _promote(gateway: Gateway, member_id: int) -> None:
    try:
        gateway.member_promote(member_id)
    except EtcdError as e:
        if 'not a learner' not in e.message:   # else done already
            raise


def leave(ctx: Context, ip: str) -> None:
    """kubeadm reset: remove this node's member through its own etcd,
    then stop it. A failure is a warning, as in kubeadm."""
    if not etcd_server.running():
        return
    local = Gateway(ctx.cluster_dir, [etcd_server.client_url(ip)])
    peer = etcd_server.peer_url(ip)
    try:
        for member in local.members():
            if peer in member['peerURLs']:
                ctx.out('[reset] Removing member from etcd cluster')
                _retried(lambda m=member: local.member_remove(m['id']))
    except EtcdError as e:
        ctx.err(f'[reset] Failed to remove etcd member: {e.message}, '
                'please manually remove this etcd member using etcdctl')
    finally:
        local.close()
    etcd_server.stop(ctx.cluster_dir, ctx.host.name)
