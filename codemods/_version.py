"""The package version, kept in one place for the build and both CLIs."""

__version__ = "0.1.0"
