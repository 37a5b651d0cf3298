"""The check a rewrite passes before it is written: no name left undefined or unused."""
