"""Nova's hypervisor for the emulated cloud: a server is a lab VM (a
network namespace with its own sshd) booted from the lab's image, at the
address of its Neutron port, with what its user data's cloud-config asks
(first_boot.py); its Cinder volumes are loop devices; its console log is
kept with its disk."""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt_lab import hosts, net
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.cloud_init import CloudConfig
from kubernetes_mgmt_lab.errors import LabError
from kubernetes_mgmt_lab.first_boot import FirstBoot
from kubernetes_mgmt_lab.manager import Lab
from kubernetes_mgmt_lab.state import LabHost

ROLE = 'server'


@dataclass(frozen=True)
class Disk:
    """A volume attached at boot: Cinder's id and size, the guest's
    device."""

    volume_id: str
    gib: int
    device: str


class Machines:
    """Boots and removes the lab VMs behind servers."""

    def __init__(self, lab_root: str):
        self.lab = Lab(lab_root)

    def boot(self, server_id: str, ip: str, compute_host: str, zone: str,
             disks: list[Disk], admin_pass: str | None = None,
             config: CloudConfig | None = None) -> str:
        """Create and boot the VM (its user's password ``admin_pass``
        when given, else the image's; ``config``: its user data's
        cloud-config); its lab host name once sshd answers."""
        with lab_state.locked(self.lab.state_file) as st:
            host = self._describe(st, server_id, ip, compute_host, zone,
                                  disks)
            st.hosts.append(host)
        try:
            self._create(host, FirstBoot(config or CloudConfig(),
                                         admin_pass))
        except BaseException:
            self.destroy(host.name)
            raise
        return host.name

    def _create(self, host: LabHost, boot_with: FirstBoot) -> None:
        """Boot the VM and record the loop devices behind its volumes
        (what Lab._create does for the lab's own VMs)."""
        try:
            hosts.create(self.lab.state, host, boot_with=boot_with)
        finally:
            with lab_state.locked(self.lab.state_file) as st:
                if host.volume_devices and any(h.name == host.name
                                               for h in st.hosts):
                    st.host(host.name).volume_devices = dict(
                        host.volume_devices)

    def console_log(self, name: str) -> str | None:
        """The console output of VM ``name`` (None: it has none)."""
        for host in self.lab.state.hosts:
            if host.name == name:
                return hosts.console_log(host)
        return None

    def _describe(self, st: lab_state.LabState, server_id: str, ip: str,
                  compute_host: str, zone: str,
                  disks: list[Disk]) -> LabHost:
        if any(h.ip == ip and h.plugged for h in st.hosts):
            raise LabError(f'address {ip} is already used by a lab VM')
        taken = {h.name for h in st.hosts}
        index = next(i for i in range(len(taken) + 1)
                     if f'vm-{i}' not in taken)
        name = f'vm-{index}'
        host = LabHost(name=name, role=ROLE, ip=ip,
                       netns=net.netns_name(st.name, name),
                       root=hosts.Layout(st.root).host_root(name),
                       server_id=server_id, compute_host=compute_host,
                       zone=zone)
        for n, disk in enumerate(disks):
            key = f'disk{n}'
            host.volume_ids[key] = disk.volume_id
            host.volume_gib[key] = disk.gib
            host.guest_devices[key] = disk.device
        return host

    def unplug(self, name: str) -> None:
        """The server's port was detached: the VM leaves the bridge."""
        with lab_state.locked(self.lab.state_file) as st:
            host = st.host(name)
            if host.plugged:
                hosts.unplug(st, host)
                host.plugged = False

    def destroy(self, name: str) -> None:
        names = {h.name for h in self.lab.state.hosts}
        if name in names:
            self.lab.remove_host(name)
