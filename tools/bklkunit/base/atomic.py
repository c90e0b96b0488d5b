# SPDX-License-Identifier: GPL-2.0
"""The one writer of result files: whole or not at all.

write_text and write_bytes write a temporary file in the same directory
(so that the rename stays on one file system), fsync it, give it the mode
open() would have, and rename it over the file in one step; then the
directory is fsynced, so that the rename itself survives a power cut.  A
reader, a job killed at any point, a full disk or a file size limit
(`ulimit -f`) never leave a file cut: it is the old one or the new one.
On an error the temporary file is removed, the old file stays as it was,
and WriteError (a UserError: one line, exit status 2) names the file.

Every file the tool writes as a result (summary.json, verdict.json,
run.json, the reports, baselines, series and mutate results, merge's and
ab's files) goes through here; logs that grow while a command runs
(build.log, kunit.log) are streamed instead.
"""

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Union

from .errors import UserError


class WriteError(UserError):
	"""A result file that could not be written; the old one is unchanged."""


def _umask() -> int:
	mask = os.umask(0o022)
	os.umask(mask)
	return mask


_UMASK = _umask()


def _fsync_dir(d: Path) -> None:
	"""Make a rename in d durable (best effort: not every file system
	lets a directory be opened or synced)."""
	try:
		fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
	except OSError:
		return
	try:
		os.fsync(fd)
	except OSError:
		pass
	finally:
		os.close(fd)


def write_bytes(path: Union[str, 'os.PathLike[str]'], data: bytes) -> None:
	"""Write path whole or not at all (see the module's docstring)."""
	path = Path(path)
	tmp = ''
	try:
		path.parent.mkdir(parents=True, exist_ok=True)
		fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
		with os.fdopen(fd, 'wb') as f:
			f.write(data)
			f.flush()
			os.fsync(f.fileno())
		try:                                 # the mode of the file it replaces,
			mode = path.stat().st_mode & 0o7777
		except FileNotFoundError:            # else the one open() would give
			mode = 0o666 & ~_UMASK
		os.chmod(tmp, mode)
		os.replace(tmp, path)
		tmp = ''
	except OSError as e:
		what = e.strerror or str(e)
		try:
			before = path.exists()
		except OSError:
			before = True
		raise WriteError(f'{path}: not written ({what}); '
				 + ('the file there before is unchanged' if before
				    else 'no file was there before')) from e
	finally:
		if tmp:
			with contextlib.suppress(OSError):
				os.unlink(tmp)
	_fsync_dir(path.parent)


def write_text(path: Union[str, 'os.PathLike[str]'], text: str) -> None:
	"""Write text (UTF-8) to path whole or not at all."""
	write_bytes(path, text.encode('utf-8'))
