"""Topology: which VMs a VNF has, in which role, with which addresses."""
