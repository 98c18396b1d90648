"""LCM script of tacker-kubernetes-mgmt for Tacker's v2 VNF LCM API.

``kubernetes-mgmt package build`` puts this file into a v2 VNF package as
Scripts/tacker_kubernetes_mgmt_v2.py; the VNFD's Vnflcm interface names it
for each operation. tacker-conductor runs it with its own interpreter, so
the plugin installed beside Tacker does the work; this file only hands
over and stays the same from one plugin version to the next. Its name
shadows no module: the script's directory comes first on sys.path.
"""
import sys

from kubernetes_mgmt.v2.entry import main

if __name__ == '__main__':
    sys.exit(main())
