#!/usr/bin/env bash
# Installs what the lab, the tests and the demo need on a fresh Debian or
# Ubuntu machine (as root): Debian packages and a virtualenv holding this
# package. Prints the virtualenv's path on the last line.
#
#   tools/bootstrap.sh [VENV_DIR]     (default /opt/kubernetes-mgmt/venv)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The lab's VMs get private copies of /etc, /home, /root, /run, /var/lib
# ... and their login user runs the emulated commands with this venv's
# Python, so it lives in /opt and is built from Debian's interpreter.
venv=${1:-/opt/kubernetes-mgmt/venv}

if [ "$(id -u)" -ne 0 ]; then
    echo "ERROR: run as root (the lab needs namespaces and a bridge)" >&2
    exit 1
fi

# util-linux, mount and e2fsprogs: losetup, mkfs.ext4, blkid and findmnt
# for the lab storage host's volume (a loop device).
echo "==> Debian packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    openssh-server openssh-client haproxy keepalived shellcheck sudo \
    iproute2 procps psmisc util-linux mount e2fsprogs curl openssl gpg \
    python3 python3-venv >/dev/null

echo "==> virtualenv at $venv" >&2
/usr/bin/python3 -m venv --clear "$venv"
"$venv/bin/pip" install -q --upgrade pip >&2
# Not editable: the package must be importable from inside lab VMs too.
"$venv/bin/pip" install -q "${repo}[test]" >&2
echo "$venv"
