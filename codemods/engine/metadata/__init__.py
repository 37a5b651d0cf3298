"""Quicker stand-ins for libcst's metadata providers, equal to them."""
