"""Placeholder; being written."""


class Lifecycle:
    pass
