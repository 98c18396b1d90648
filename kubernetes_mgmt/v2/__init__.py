"""Stable names for Tacker's v2 API: the LCM script copied into v2 VNF
packages (``lcm_script``) and the ``main`` it imports (``entry``). The
work is in ``kubernetes_mgmt.shim.v2``."""
