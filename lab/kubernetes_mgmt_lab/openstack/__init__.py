"""OpenStack's control plane as a site runs it, on this machine: MariaDB
and RabbitMQ from Debian, Keystone, Glance and Tacker from PyPI, with the
plugin installed into Tacker the way README tells operators.

``site.up`` starts it, ``site.down`` ends every process it started."""
