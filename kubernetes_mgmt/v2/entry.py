"""The name the v2 LCM script of every package imports
(``v2/lcm_script.py``, copied into packages as built): the script's body
lives in the shim (``shim.v2.entry``)."""
from kubernetes_mgmt.shim.v2.entry import main

__all__ = ['main']
