"""``containerd`` stand-in: ``config default`` and ``--version``, in
containerd 1.x's layout, or 2.x's when the installed package is 2.x."""
from __future__ import annotations

from kubernetes_mgmt_lab.emulated import packages, runner
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

# Short configs in containerd's TOML layouts with the keys install
# scripts edit (SystemdCgroup, the sandbox image, the registry
# config_path). 1.x: config version 2.
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


# 2.x: config version 3; the CRI plugin is split into images and
# runtime, the sandbox image is pinned_images.sandbox, and the runc
# options carry no SystemdCgroup line.
DEFAULT_CONFIG_2X = """\
version = 3
root = '/var/lib/containerd'
state = '/run/containerd'

[grpc]
  address = '/run/containerd/containerd.sock'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    max_concurrent_downloads = 3

    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'registry.k8s.io/pause:3.10'

    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = ''

  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          runtime_type = 'io.containerd.runc.v2'

          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
            BinaryName = ''
            ShimCgroup = ''
"""


def _version() -> str:
    installed = packages.version_of('containerd') or ''
    return '2.1.4' if installed.startswith('2') else '1.7.12'


def main(ctx: Context, args: list[str]) -> int:
    if args[:1] in (['--version'], ['-v']):
        ctx.out(f'containerd containerd.io {_version()} lab')
        return 0
    if args[:2] == ['config', 'default']:
        major = _version().split('.')[0]
        print(DEFAULT_CONFIG_2X if major == '2' else DEFAULT_CONFIG, end='')
        return 0
    raise CommandError('containerd: the lab runs containerd as a recorded '
                       'systemd unit', 1)


def cli() -> None:
    runner.run('containerd', main, mutating=lambda a: False,
               needs=('containerd', 'containerd.io'))


if __name__ == '__main__':
    cli()
