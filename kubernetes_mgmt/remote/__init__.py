"""Remote execution on the VNF's VMs over SSH."""
