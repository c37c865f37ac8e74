"""Configuration: models, loading from YAML plus environment, template and reference.

Modules: `models` (the sections), `load` (file + ``UKR_`` variables), `template` (the
commented ``ukr.yaml`` and the Markdown reference). Imports only the domain and util layers.
"""
