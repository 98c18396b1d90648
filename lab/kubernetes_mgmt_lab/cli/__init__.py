"""The lab's sub-commands of ``kubernetes-mgmt`` (``lab``, ``demo``),
plugged in through the entry-point group ``kubernetes_mgmt.cli_commands``.
"""
