"""The schema machinery behind tool definitions (private): type hints and docstrings to JSON Schema, validators,
schema-guided coercion, and the JSON Schema helpers the provider transforms share.

* :mod:`.schema` — a signature to JSON Schema (draft 2020-12) and a validator, through pydantic's public API;
  :mod:`.fastschema` the fast path for simple signatures (proven equal by tests), :mod:`.fastkinds` what it knows
  of annotations and parameters (shared between tools), :mod:`.fasthints` its cheap signature and hint readers;
  :mod:`.function_schema` what a function's schema is; :mod:`.hints` what type hints say; :mod:`.docstrings`
  parameter descriptions from Google / NumPy / Sphinx docstrings.
* :mod:`.coerce` — schema-guided coercion for schema-only tools (MCP, YAML); :mod:`.jsonschema` helpers shared by
  the provider transforms and the runtime; :mod:`.strict_nulls` undoing strict mode's nulls.

Only toolrig's own modules import these; the public names are re-exported by :mod:`toolrig`.
"""
