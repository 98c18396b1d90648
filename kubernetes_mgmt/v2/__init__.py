"""Tacker's v2 VNF LCM API: the Mgmt Driver as a script of the VNF package
that tacker-conductor runs in a child process, over the v1 hooks."""
