# SPDX-License-Identifier: GPL-2.0
"""The .gcda files a guest's /init printed on its console
(kunit/coverage/gcov-init.c), read back and checked.

The records, each line starting with MARK (text before it on the same line,
e.g. a printk prefix, is kept as console):

  BKL-GCOV BEGIN 1
  BKL-GCOV FILE <path> <size> <fnv-1a 32, hex>
  BKL-GCOV D <base64>            (any number)
  BKL-GCOV END
  BKL-GCOV ERROR <path> <errno>
  BKL-GCOV DONE <files> <errors>

A file whose size or hash does not match, a record cut off, or a dump
without its DONE line is a problem: named, never silently dropped.
"""

import base64
import binascii
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..base import atomic

MARK = 'BKL-GCOV '


@dataclass
class Dump:
	files: Dict[str, bytes] = field(default_factory=dict)   # path under gcov/ -> contents
	problems: List[str] = field(default_factory=list)
	begun: bool = False
	done: bool = False
	console: List[str] = field(default_factory=list)        # every other line
	lines: List[str] = field(default_factory=list)          # the dump's own lines

	@property
	def complete(self) -> bool:
		return self.begun and self.done and not self.problems


def fnv1a32(data: bytes) -> int:
	h = 2166136261
	for b in data:
		h = ((h ^ b) * 16777619) & 0xffffffff
	return h


def read(console: Sequence[str]) -> Dump:
	"""The dump in a console (lines with or without their newlines)."""
	d = Dump()
	cur: Optional[List[str]] = None          # [path, size, hash]
	chunks: List[str] = []
	for n, raw in enumerate(console, 1):
		line = raw.rstrip('\r\n')
		at = line.find(MARK)
		if at < 0:
			d.console.append(raw)
			continue
		before = line[:at]
		if before.strip():
			d.console.append(before + '\n')
		d.lines.append(line[at:] + '\n')
		words = line[at + len(MARK):].split()
		kind, args = (words[0], words[1:]) if words else ('', [])
		if kind == 'BEGIN':
			d.begun = True
		elif kind == 'FILE' and len(args) == 3:
			if cur is not None:
				d.problems.append(f'{cur[0]}: cut off (no END before console line {n})')
			cur, chunks = args, []
		elif kind == 'D' and cur is not None and len(args) == 1:
			chunks.append(args[0])
		elif kind == 'END' and cur is not None:
			_finish(d, cur, chunks)
			cur = None
		elif kind == 'ERROR':
			d.problems.append(f'the guest could not read {" ".join(args)} (errno)')
		elif kind == 'DONE' and len(args) == 2:
			d.done = True
			if cur is not None:
				d.problems.append(f'{cur[0]}: cut off (no END)')
				cur = None
			if args[0].isdigit() and int(args[0]) != len(d.files) and not d.problems:
				d.problems.append(f'the guest dumped {args[0]} files, {len(d.files)} read back')
		else:
			d.problems.append(f'console line {n}: not a dump record: {line[at:][:80]!r}')
	if cur is not None:
		d.problems.append(f'{cur[0]}: cut off (the console ends)')
	if d.begun and not d.done:
		d.problems.append('the dump has no DONE line: the guest stopped while printing it')
	return d


def _finish(d: Dump, head: List[str], chunks: List[str]) -> None:
	path, size, want = head
	try:
		data = base64.b64decode(''.join(chunks), validate=True)
	except (binascii.Error, ValueError) as e:
		d.problems.append(f'{path}: damaged base64 ({e})')
		return
	if not size.isdigit() or len(data) != int(size):
		d.problems.append(f'{path}: {len(data)} bytes read back, {size} dumped')
		return
	if f'{fnv1a32(data):08x}' != want.lower():
		d.problems.append(f'{path}: checksum {fnv1a32(data):08x}, {want} dumped')
		return
	d.files[path] = data


def write_files(d: Dump, root: Path) -> List[Path]:
	"""The dump's files under root, at their paths (the object's path in the
	build directory, as debugfs names it under gcov/)."""
	out = []
	for path, data in sorted(d.files.items()):
		rel = Path(path.lstrip('/'))
		if '..' in rel.parts:
			raise ValueError(f'dump path {path!r} leaves the directory')
		dest = root / rel
		dest.parent.mkdir(parents=True, exist_ok=True)
		atomic.write_bytes(dest, data)
		out.append(dest)
	return out
