"""Configuration: models, loading from YAML plus environment, template and reference.

Modules: `models` (the sections), `load` (file + ``UKR_`` variables), `template` (the
commented ``ukr.yaml`` and the Markdown reference), `prompts` (the ``prompts`` section and the
reading and checking of prompt override files). Imports only the domain and util layers.
"""
