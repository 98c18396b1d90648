#!/usr/bin/env bash
# The demo on a fresh machine: install what it needs, then let the driver
# build a simple (1+2) and an HA (3+2) cluster in throw-away labs.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$("$repo/tools/bootstrap.sh" "${KMGMT_VENV:-/opt/kubernetes-mgmt/venv}" \
       | tail -n 1)
exec "$venv/bin/kubernetes-mgmt" demo "$@"
