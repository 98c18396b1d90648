"""Pieces of the lab's Heat API double (``kubernetes_mgmt_lab.heat_api``).

``stacks`` derives the stacks and resources from the lab state, ``render``
turns them into Heat's JSON shapes, ``service`` answers requests and
``update`` performs stack updates (scale, heal) through the lab manager.
``fake`` is a lab without VMs for unit tests.
"""
