# SPDX-License-Identifier: GPL-2.0
"""Argument types of the command line, shared by the verbs' options."""

import argparse
from typing import Callable


def at_least(low: int) -> Callable[[str], int]:
	"""An argparse type: an integer no smaller than low."""
	def parse(text: str) -> int:
		try:
			n = int(text)
		except ValueError:
			raise argparse.ArgumentTypeError(f'not a whole number: {text!r}')
		if n < low:
			raise argparse.ArgumentTypeError(f'must be at least {low}, not {n}')
		return n
	parse.__name__ = f'integer >= {low}'
	return parse
