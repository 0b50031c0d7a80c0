"""A toolrig tool package (see docs/packages.md)."""
