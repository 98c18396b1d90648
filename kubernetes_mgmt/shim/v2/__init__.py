"""Tacker's v2 VNF LCM API: the script that tacker-conductor runs in a
child process for each operation of a v2 VNF package."""
