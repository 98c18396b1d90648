"""What every emulated command does around its own work: find the host,
fire an injected fault, turn errors into the tool's exit status, log
mutating commands in the cluster's event list, and the argv of every
command started in the argv log.
"""
from __future__ import annotations

import os
import resource
import sys
import time

from kubernetes_mgmt_lab.emulated import faults, packages, store
from kubernetes_mgmt_lab.emulated.host import HostInfo

TYPE_CHECKING = False    # typing's own flag costs an import of typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from kubernetes_mgmt_lab.emulated.config import LabConfig

    Main = Callable[['Context', list], int]


class CommandError(Exception):
    """Ends the command: ``message`` goes to stderr, ``code`` is the exit
    status."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message = message
        self.code = code


class Context:
    """The running command: its host and argv. A plain class, like
    HostInfo, to keep dataclasses off every command's start-up."""

    def __init__(self, host: HostInfo, argv: list[str]):
        self.host = host
        self.argv = argv
        self._config: LabConfig | None = None

    @property
    def cluster_dir(self) -> str:
        return self.host.cluster_dir

    @property
    def config(self) -> LabConfig:
        if self._config is None:
            from kubernetes_mgmt_lab.emulated.config import LabConfig
            self._config = LabConfig.load(self.cluster_dir)
        return self._config

    def path(self, path: str) -> str:
        return self.host.path(path)

    def out(self, text: str = '') -> None:
        print(text, flush=True)

    def err(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)


def checkpoint(ctx: Context, stage: str) -> None:
    """Fail here if a fault is armed for this command at ``stage``
    (``faults``): the command dies half-way, as a real one can."""
    message = faults.take_fault(ctx.cluster_dir, ctx.host.name, ctx.argv,
                                stage)
    if message is not None:
        raise CommandError(message)


def _execute(ctx: Context, main: Main, args: list[str]) -> int:
    faults.wait_while_held(ctx.cluster_dir, ctx.host.name, ctx.argv)
    message = faults.take_fault(ctx.cluster_dir, ctx.host.name, ctx.argv)
    if message is not None:
        ctx.err(message)
        return 1
    try:
        return int(main(ctx, args) or 0)
    except CommandError as e:
        if e.message:
            ctx.err(e.message)
        return e.code
    except BrokenPipeError:
        return 141


def run(name: str, main: Main,
        mutating: Callable[[list[str]], bool] = lambda args: True,
        needs: tuple[str, ...] = ()) -> None:
    """Run ``main(ctx, args)`` as the command ``name`` and exit.

    ``needs``: packages of which one must be installed on the host, as a
    binary only exists on a VM after its package is installed.
    """
    cpu = _cpu_seconds()    # a worker of the agent ran others before
    args = sys.argv[1:]
    # A wrapper installed under another name (shutdown -> reboot).
    name = os.environ.pop('KLAB_ARGV0', None) or name
    try:
        host = HostInfo.load()
    except (OSError, ValueError) as e:
        print(f'{name}: lab host description unreadable: {e}',
              file=sys.stderr)
        sys.exit(1)
    ctx = Context(host=host, argv=[name, *args])
    store.record_argv(ctx.cluster_dir, host.name, ctx.argv)
    if needs and not packages.any_installed(needs):
        ctx.err(f'{name}: command not found')
        sys.exit(127)
    started = time.time()
    rc = _execute(ctx, main, args)
    if mutating(args):
        store.record_event(ctx.cluster_dir, host.name, ctx.argv,
                           started, rc)
    store.record_cpu(ctx.cluster_dir, host.name, name,
                     _cpu_seconds() - cpu)
    sys.exit(rc)


def _cpu_seconds() -> float:
    """This process's CPU time, with the processes it waited for (the
    real kubectl behind the wrapper)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + \
        children.ru_stime
