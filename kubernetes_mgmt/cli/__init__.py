"""``kubernetes-mgmt``: operator and developer command line.

Each sub-command lives in its own module exposing ``register(subparsers)``;
the function it sets as ``func`` returns the exit status. The product's
own are listed below; other distributions (the lab's ``lab`` and ``demo``)
add theirs through the entry-point group ``kubernetes_mgmt.cli_commands``,
whose objects have the same ``register``.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from importlib import metadata

from kubernetes_mgmt import redact
from kubernetes_mgmt.cli import closed_pipe

_SUBCOMMAND_MODULES = (
    'kubernetes_mgmt.cli.validate',
    'kubernetes_mgmt.cli.package_commands',
    'kubernetes_mgmt.cli.plan_command',
    'kubernetes_mgmt.cli.monitoring_command',
)
PLUGIN_GROUP = 'kubernetes_mgmt.cli_commands'


def _plugins() -> list:
    """The installed sub-commands of other distributions, by name."""
    found = metadata.entry_points(group=PLUGIN_GROUP)
    return [entry.load() for entry in sorted(found, key=lambda e: e.name)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='kubernetes-mgmt',
        description='Tacker Kubernetes Mgmt Driver tools.')
    subparsers = parser.add_subparsers(dest='command', required=True)
    modules = [importlib.import_module(n) for n in _SUBCOMMAND_MODULES]
    for module in modules + _plugins():
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    return closed_pipe.quietly(lambda: _run(argv))


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    # One operation: secrets registered while it runs are masked in what
    # it prints and logs.
    with redact.operation(f'kubernetes-mgmt {args.command}'), \
            redact.masked_output():
        return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
