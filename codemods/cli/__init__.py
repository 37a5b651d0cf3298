"""The command lines: options, configuration, and the one output module."""
