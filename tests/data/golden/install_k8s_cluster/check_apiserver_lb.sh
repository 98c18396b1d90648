#!/bin/bash
# Managed by kubernetes-mgmt (install_k8s_cluster.sh): local changes are overwritten.
# keepalived track script: healthy while HAProxy accepts connections on the
# API load-balancer port. A TCP connect, not a process check, so it proves
# that this node really forwards.
exec /usr/bin/timeout 2 /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/16443' 2>/dev/null
