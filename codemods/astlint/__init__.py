"""The ``ast`` detector: lint without libcst's parse."""
