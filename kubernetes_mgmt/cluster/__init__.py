"""Cluster operations: idempotent steps run on one host each."""
