"""Exit codes and the one place where exceptions become messages for the CLI."""
from __future__ import annotations

EXIT_OK = 0
EXIT_USER = 1  # bad path, unknown format, bad setting: the user can fix it
EXIT_INTERNAL = 2  # a bug or an unexpected failure: see the log file


class UserError(Exception):
    """Something the user can fix; its message is shown as is, on one line."""
