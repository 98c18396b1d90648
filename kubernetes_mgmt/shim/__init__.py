"""The Tacker shim: the only package that knows Tacker's objects.

v1 hooks (``v1_hooks``) and the v2 LCM script (``v2``) turn each call into
a typed operation request and a state store for ``operations``; nothing
below sees ``vnf_instance`` or ``context``.
"""
