# SPDX-License-Identifier: GPL-2.0
"""Errors that end a command with a clear message and no traceback."""


class UserError(Exception):
	"""Something the user can fix: the message says what and how."""

	def __init__(self, message: str, exit_code: int = 2):
		super().__init__(message)
		self.exit_code = exit_code
