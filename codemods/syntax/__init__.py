"""Node helpers of both trees (``ast`` and libcst) side by side, and the gates."""
