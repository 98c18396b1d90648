"""The kubeadm-config ConfigMap (kube-system): the cluster's
ClusterConfiguration as kubeadm uploads it at init and at every upgrade,
so whoever reads the cluster's kubernetesVersion the way one does on a
real cluster finds it."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import cluster, objects, yamlio

NAME = 'kubeadm-config'
NAMESPACE = 'kube-system'


def document(info: dict) -> dict:
    """The ClusterConfiguration of the cluster record ``info``."""
    doc = {
        'apiVersion': 'kubeadm.k8s.io/v1beta4',
        'kind': 'ClusterConfiguration',
        'certificatesDir': '/etc/kubernetes/pki',
        'clusterName': info.get('cluster_name') or 'kubernetes',
        'etcd': {'local': {'dataDir': '/var/lib/etcd'}},
        'imageRepository': info.get('image_repository') or
        'registry.k8s.io',
        'kubernetesVersion': info['kubernetes_version'],
        'networking': {'dnsDomain': 'cluster.local',
                       'serviceSubnet': info.get('service_subnet')},
    }
    if info.get('pod_subnet'):
        doc['networking']['podSubnet'] = info['pod_subnet']
    if info.get('control_plane_endpoint'):
        doc['controlPlaneEndpoint'] = info['control_plane_endpoint']
    return doc


def put(state: dict) -> None:
    """Create or update the ConfigMap from the state's cluster record."""
    old = cluster.find(state, 'ConfigMap', NAME, NAMESPACE)
    meta = (old or {}).get('metadata') or objects.new_meta(NAME, NAMESPACE)
    cluster.put(state, {
        'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': meta,
        'data': {'ClusterConfiguration': yamlio.dump(
            document(state['cluster']))}})
