"""The libcst engine: the fixing pass, its metadata and its import edits."""
