# Managed by kubernetes-mgmt (install_k8s_cluster.sh): local changes are overwritten.
server = "https://registry-1.docker.io"

[host."https://mirror.example:5000"]
  capabilities = ["pull", "resolve"]

[host."https://mirror2.example"]
  capabilities = ["pull", "resolve"]
