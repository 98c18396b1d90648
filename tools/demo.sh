#!/usr/bin/env bash
# The demo on a fresh machine: install what it needs, then let the driver
# build a simple (1+2) and an HA (3+2) cluster on throw-away stacks of the
# lab's OpenStack services.
# Afterwards the kubernetes-mgmt command is on root's PATH (a link in
# /usr/local/bin to the virtualenv's), for the README's next commands.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$("$repo/tools/bootstrap.sh" "${KMGMT_VENV:-/opt/kubernetes-mgmt/venv}" \
       | tail -n 1)
bin_dir=${KMGMT_BIN_DIR:-/usr/local/bin}
link="$bin_dir/kubernetes-mgmt"
# A regular file there is another kubernetes-mgmt: left alone.
if [ ! -e "$link" ] || [ -L "$link" ]; then
    ln -sfn "$venv/bin/kubernetes-mgmt" "$link"
    echo "==> kubernetes-mgmt: $link -> $venv/bin/kubernetes-mgmt" >&2
else
    echo "==> $link exists and is not a link: left alone; the command" \
         "is $venv/bin/kubernetes-mgmt" >&2
fi
exec "$venv/bin/kubernetes-mgmt" demo --plugin "$repo" "$@"
