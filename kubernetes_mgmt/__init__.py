"""Tacker Mgmt Driver plugin that builds Kubernetes clusters on VNF VMs."""
