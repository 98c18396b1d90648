"""Registering a cluster as a Tacker VIM, behind an adapter.

``registry_for(conf)`` picks the registry ``[kubernetes_mgmt]
vim_registry`` names (Tacker's NFVO inside tacker-conductor, or another
distribution's, such as the lab's JSON file); ``connection`` adds the
VIM to a VNF instance's ``vim_connection_info``.
"""
from kubernetes_mgmt.vim.registration import VimError, VimRecord, VimSpec
from kubernetes_mgmt.vim.registry import VimRegistry, registry_for

__all__ = ['VimError', 'VimRecord', 'VimRegistry', 'VimSpec',
           'registry_for']
