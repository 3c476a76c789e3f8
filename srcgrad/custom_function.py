"""Placeholder until the Function machinery lands (replaced by srcgrad/function.py's contents)."""


def is_apply(obj):
    return None
