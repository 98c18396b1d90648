"""The sample VNF package (CSAR): build it, verify it.

``build`` assembles the CSAR from ``samples/vnf_package`` (shipped in the
wheel as package data), the installed driver module, the node scripts, the
ETSI SOL001 type files of the Tacker distribution and a VM image, and
writes the SHA-256 of every artifact into TOSCA.meta. ``verify`` checks a
CSAR the way Tacker will use it: hashes, referenced paths, the driver
module's identity and the user data class.
"""
