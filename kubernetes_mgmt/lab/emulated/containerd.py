"""``containerd`` stand-in: ``config default`` and ``--version``."""
from __future__ import annotations

from kubernetes_mgmt.lab.emulated import runner
from kubernetes_mgmt.lab.emulated.runner import CommandError, Context

# A short config in containerd's TOML layout with the keys install
# scripts edit (SystemdCgroup, sandbox_image).
DEFAULT_CONFIG = """\
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.8"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""
"""


def main(ctx: Context, args: list[str]) -> int:
    if args[:1] in (['--version'], ['-v']):
        ctx.out('containerd containerd.io 1.7.12 lab')
        return 0
    if args[:2] == ['config', 'default']:
        print(DEFAULT_CONFIG, end='')
        return 0
    raise CommandError('containerd: the lab runs containerd as a recorded '
                       'systemd unit', 1)


if __name__ == '__main__':
    runner.run('containerd', main, mutating=lambda a: False,
               needs=('containerd', 'containerd.io'))
