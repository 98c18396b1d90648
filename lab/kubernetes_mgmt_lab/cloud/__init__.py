"""What lies below Heat: the compute, network and block-storage APIs
(Nova, Neutron, Cinder) that Heat's resource plugins and Tacker call,
emulated over HTTP and backed by the lab's VMs, bridge and loop devices.

Only the calls those clients really make are served, each answering the
shapes the real service documents; anything else is a 404 in the
service's own error format, logged so that a missing call is found.
"""
