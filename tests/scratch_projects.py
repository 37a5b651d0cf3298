"""What the scratch projects of command-line tests declare."""

#: A scratch project judged at the current releases, as runs with no project were before
#: ranges of releases: for tests of the command line that are not about ranges (a project
#: that declares nothing is judged from each file's evidence floor: tests/test_evidence.py).
CURRENT_RELEASES = '[tool.fsdp-compat]\ntarget-torch = "latest"\ntarget-lightning = "latest"\n'
