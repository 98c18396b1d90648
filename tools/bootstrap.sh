#!/usr/bin/env bash
# Installs what the lab, the tests and the demo need on a fresh Debian or
# Ubuntu machine (as root): Debian packages and a virtualenv holding the
# product (tacker-kubernetes-mgmt) and its lab (lab/,
# tacker-kubernetes-mgmt-lab). Needs the Debian and Python package registries (apt, PyPI).
# apt's and pip's own output goes to a log, shown only when a step fails.
# Prints the virtualenv's path on the last line.
#
#   tools/bootstrap.sh [VENV_DIR]     (default /opt/kubernetes-mgmt/venv)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The lab's VMs get private copies of /etc, /home, /root, /run, /var/lib
# ... and their login user runs the emulated commands with this venv's
# Python, so it lives in /opt and is built from Debian's interpreter.
venv=${1:-/opt/kubernetes-mgmt/venv}
python=${KMGMT_PYTHON:-/usr/bin/python3}

if [ "$(id -u)" -ne 0 ]; then
    echo "ERROR: run as root (the lab needs namespaces and a bridge)" >&2
    exit 1
fi

log=$(mktemp -t kmgmt-bootstrap.XXXXXX)
trap 'rm -f "$log"' EXIT

# Runs "$@" with its output in the log; on failure shows that output.
quietly() {
    if ! "$@" >>"$log" 2>&1; then
        echo "ERROR: failed: $*" >&2
        cat "$log" >&2
        exit 1
    fi
}

# util-linux, mount and e2fsprogs: losetup, mkfs.ext4, blkid and findmnt
# for the lab storage host's volume (a loop device). mariadb-server and
# rabbitmq-server: Tacker's database and message bus in the Tacker lab.
# gcc and libc6-dev: the lab hosts' command agent client (klab_run.c).
# prometheus, prometheus-alertmanager: promtool and amtool check the
# automatic heal's rule file and route; the lab runs them too.
# containerd, runc, docker-registry and skopeo: a real registry and a
# real containerd for the air-gapped site tests (registry mirrors).
echo "==> Debian packages" >&2
export DEBIAN_FRONTEND=noninteractive
quietly apt-get update -qq
quietly apt-get install -y -qq --no-install-recommends \
    openssh-server openssh-client haproxy keepalived shellcheck sudo \
    iproute2 procps psmisc util-linux mount e2fsprogs curl openssl gpg \
    python3 python3-venv mariadb-server rabbitmq-server gcc libc6-dev \
    etcd-server etcd-client prometheus prometheus-alertmanager \
    prometheus-node-exporter containerd runc docker-registry skopeo

echo "==> virtualenv at $venv (the product, its lab and their dependencies from PyPI)" >&2
quietly "$python" -m venv --clear "$venv"
quietly "$venv/bin/pip" install -q --upgrade pip
# Not editable: the packages must be importable from inside lab VMs too.
quietly "$venv/bin/pip" install -q "${repo}[test]" "${repo}/lab"
echo "$venv"
