# Managed by kubernetes-mgmt (install_k8s_cluster.sh): local changes are overwritten.
server = "https://registry.k8s.io"

[host."{WWW}/registry"]
  capabilities = ["pull", "resolve"]
