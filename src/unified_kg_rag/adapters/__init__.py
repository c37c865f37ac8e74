"""Technology bindings implementing the ports: SQLite stores, model providers, parsers.

Adapters register into `adapters.registry`; `bootstrap` builds them from configuration.
"""
