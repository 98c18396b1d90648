"""The VIM registry protocol and how one is chosen."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kubernetes_mgmt import seams
from kubernetes_mgmt.vim.registration import VimRecord, VimSpec


@runtime_checkable
class VimRegistry(Protocol):
    """Where clusters are registered as VIMs."""

    def check_ready(self) -> None:
        """Refuse (VimError) when this registry cannot store a VIM, so
        that an operation fails before it touches any host."""

    def find(self, context: Any, name: str) -> VimRecord | None:
        """The VIM named ``name``, or None."""

    def get(self, context: Any, vim_id: str) -> VimRecord | None:
        """The VIM with this id, or None."""

    def register(self, context: Any, spec: VimSpec) -> VimRecord:
        """Register ``spec``; reuse a VIM with the same name, URL and
        CA certificate; refuse (VimError) one with the same name and
        another URL or CA (``model.reuse``)."""

    def delete(self, context: Any, vim_id: str) -> None:
        """Delete the VIM; a missing VIM is not an error."""

    def in_use(self, context: Any, vim_id: str) -> list[str]:
        """Ids of VNF instances whose vim_connection_info names it."""

    def with_url(self, context: Any, auth_url: str) -> list[VimRecord]:
        """Every VIM of this endpoint, whoever registered it (an operator
        may add one per namespace, with a token for that namespace)."""


def registry_for(conf: Any = None) -> VimRegistry:
    """The registry ``[kubernetes_mgmt] vim_registry`` names (entry-point
    group ``kubernetes_mgmt.vim_registries``): ``factory(conf)``."""
    if conf is None:
        from kubernetes_mgmt.conf import CONF as conf
    return seams.chosen(seams.VIM_REGISTRIES, conf)(conf)


def tacker_registry(conf: Any = None) -> VimRegistry:
    """Tacker's NFVO (entry point ``tacker``)."""
    from kubernetes_mgmt.vim.tacker_registry import TackerVimRegistry
    return TackerVimRegistry()


@dataclass(frozen=True)
class SiteVims:
    """A registry with the caller's request context bound (the shim makes
    it; the operations never hold Tacker's context)."""

    registry: VimRegistry
    context: Any = None

    def check_ready(self) -> None:
        self.registry.check_ready()

    def find(self, name: str) -> VimRecord | None:
        return self.registry.find(self.context, name)

    def get(self, vim_id: str) -> VimRecord | None:
        return self.registry.get(self.context, vim_id)

    def register(self, spec: VimSpec) -> VimRecord:
        return self.registry.register(self.context, spec)

    def delete(self, vim_id: str) -> None:
        self.registry.delete(self.context, vim_id)

    def in_use(self, vim_id: str) -> list[str]:
        return self.registry.in_use(self.context, vim_id)

    def with_url(self, auth_url: str) -> list[VimRecord]:
        return self.registry.with_url(self.context, auth_url)
