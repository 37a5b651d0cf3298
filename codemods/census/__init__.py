"""The deprecation census of torch's own sources (``python -m codemods.census.scan``)."""
