"""The steps that turn VMs into cluster nodes: their declarations on a
graph (``declare``) and their actions (``cluster_setup``, storage)."""
