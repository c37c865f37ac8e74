"""Leaf kernel: errors, hashing, registries and async helpers. Imports no other layer."""
