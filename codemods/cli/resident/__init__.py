"""A resident server for the commands callers start once per file or commit.

A commit hook or an editor starts ``fsdp-lint`` for one file at a time, and most of
what such a start costs is Python loading the lint's modules, not the lint itself
(benchmarks/README.md). The ``fsdp-lint-hook`` and ``fsdp-migrate-hook`` scripts (the
commands of ``.pre-commit-hooks.yaml``) hand their command line instead to a server
that keeps those modules loaded: for each request it forks a child, which takes the
caller's standard streams, working directory, environment and arguments, runs the
command exactly as the caller's own process would, and sends back its exit status.

- :mod:`.client`: the scripts' side; it loads none of the lint's modules, and runs the
  command in its own process when no server answers (the first call of a session; then
  it starts one for the next call) or when ``FSDP_COMPAT_RESIDENT=0`` turns it off.
- :mod:`.server`: the server; it stops after ``FSDP_COMPAT_RESIDENT_IDLE`` seconds
  without a request (default 3600, an hour), and when a file of the package changes
  under it (the caller then runs the command itself and starts a fresh server).
- :mod:`.child`: a request's run in the forked child.

The socket lives in a directory only its user can enter: ``$XDG_RUNTIME_DIR/fsdp-compat``,
else ``$TMPDIR/fsdp-compat-UID`` (``FSDP_COMPAT_RUNTIME_DIR`` names another). A
directory owned by someone else, or open to others, is not used.
"""
