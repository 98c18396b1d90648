"""Tacker's configuration in the script's process.

tacker-conductor starts the script with no arguments and no configuration
loaded, yet the driver needs tacker.conf: its own ``[kubernetes_mgmt]``
options (the state key above all) and what Tacker's VIM registry needs
(database, Barbican). The conductor's configuration files are on its
command line (``--config-file``/``--config-dir``): the script's parent
process is a conductor worker, so they are read from it or its master.
Without them oslo.config looks in its default places (/etc/tacker/tacker.conf).
"""
from __future__ import annotations

import os
import shlex
from typing import Any

from kubernetes_mgmt.conf import CONF

_FILE_OPTIONS = ('--config-file', '--config-dir')
_ANCESTORS = 4      # script <- worker <- master <- launcher


def parent_config_args(pid: int | None = None) -> list[str]:
    """The ``--config-file``/``--config-dir`` arguments of the process
    that started this one, or of its nearest ancestor that has them:
    tacker-conductor's workers run the script, and their titles
    (setproctitle) no longer show the arguments, which the master's title
    keeps in brackets."""
    pid = os.getppid() if pid is None else pid
    for _ in range(_ANCESTORS):
        argv = _argv(pid)
        found = _config_args(argv)
        if found or pid <= 1:
            return found
        pid = _parent_of(pid)
    return []


def _argv(pid: int) -> list[str]:
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            argv = [os.fsdecode(a) for a in f.read().split(b'\0') if a]
    except OSError:
        return []
    if len(argv) == 1 and '[' in argv[0] and argv[0].rstrip().endswith(']'):
        # "tacker-conductor: master process [<its command line>]"
        inner = argv[0].rstrip()[argv[0].index('[') + 1:-1]
        try:
            return shlex.split(inner)
        except ValueError:
            return []
    return argv


def _parent_of(pid: int) -> int:
    try:
        with open(f'/proc/{pid}/stat', encoding='ascii') as f:
            return int(f.read().rsplit(')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 1


def _config_args(argv: list[str]) -> list[str]:
    found: list[str] = []
    for index, arg in enumerate(argv):
        name, sep, value = arg.partition('=')
        if name not in _FILE_OPTIONS:
            continue
        if sep:
            found += [name, value]
        elif index + 1 < len(argv):
            found += [name, argv[index + 1]]
    return found


def load(args: list[str] | None = None) -> Any:
    """Parse Tacker's configuration (``args``: default, the parent's
    configuration files) into the global CONF: the script's process runs
    one operation, so this happens once."""
    # As tacker-conductor starts: Tacker's options (core, logging,
    # database, every group), then the files, then its RPC transport and
    # its versioned objects.
    import tacker.conf  # noqa: F401
    from tacker import objects
    from tacker.common import config as tacker_config

    # Registers [keystone_authtoken], which the key manager of the VIM
    # registry (Barbican) logs in with, as in the conductor.
    from tacker.conductor import conductor_server  # noqa: F401
    from tacker.sol_refactored import objects as v2_objects

    tacker_config.init(parent_config_args() if args is None else args)
    objects.register_all()
    v2_objects.register_all()
    return CONF
