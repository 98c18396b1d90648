"""Tacker's configuration in the script's process.

tacker-conductor starts the script with no arguments and no configuration
loaded, yet the driver needs tacker.conf: its own ``[kubernetes_mgmt]``
options (the state key above all) and what Tacker's VIM registry needs
(database, Barbican). The conductor's configuration files are on its
command line (``--config-file``/``--config-dir``): the script's parent
process is the conductor, so they are read from there. Without them
oslo.config looks in its default places (/etc/tacker/tacker.conf).
"""
from __future__ import annotations

import os
from typing import Any

from kubernetes_mgmt.conf import CONF

_FILE_OPTIONS = ('--config-file', '--config-dir')


def parent_config_args(pid: int | None = None) -> list[str]:
    """The ``--config-file``/``--config-dir`` arguments of process
    ``pid`` (default: the parent), in their order."""
    pid = os.getppid() if pid is None else pid
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            argv = [os.fsdecode(a) for a in f.read().split(b'\0') if a]
    except OSError:
        return []
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
    import tacker.conf  # noqa: F401  (registers Tacker's options)

    CONF(parent_config_args() if args is None else args, project='tacker')
    return CONF
