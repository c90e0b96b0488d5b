# SPDX-License-Identifier: GPL-2.0
"""What the terminal shows while kunit.py builds and boots.

Without -v, a command's output goes to its log only, and the terminal gets
a progress line: on a TTY one line rewritten in place, elsewhere (a CI log)
a line of its own every INTERVAL seconds (run --progress-interval), and a
line when the command ends.  During a build, which prints nothing for
minutes (kunit.py build sends make's output to /dev/null), the line says
what the compilers under it are making, read from /proc; during a boot it
counts the results kunit.py exec printed.
"""

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

from . import kunit_tool

# Set while several arches build at once (run --parallel): their progress
# lines are printed one after the other instead of rewriting one line.
LINES_ONLY = False
INTERVAL = 30            # seconds between progress lines in a log (--progress-interval)
TICK = 1.0               # seconds stream() waits for output before it looks at the time
# kunit.py exec's reading of each KTAP result, and its suite headers.
RESULT_LINE, SUITE_LINE = kunit_tool.RESULT_LINE, kunit_tool.SUITE_LINE
COMPILER = re.compile(r'(^|-)(gcc|cc|clang|ccache)(-\d+)?$')
LINKER = re.compile(r'(^|-)ld(\.bfd|\.gold|\.lld)?$')


def say(what: str, phase: str) -> None:
	"""A line of its own: '[hh:mm:ss] x86_64: build'."""
	print(f'[{time.strftime("%H:%M:%S")}] {what}: {phase}', flush=True)


def clock() -> float:
	return time.monotonic()


def describe_process(argv: List[str]) -> str:
	"""What a process of a kernel build is making: 'CC fs/ufs/inode.o' for a
	compiler writing an object, 'LD vmlinux' for the linker, '' otherwise
	(cc1 writing a temporary .s, make, sh ...)."""
	if not argv:
		return ''
	prog = os.path.basename(argv[0])
	try:
		target = argv[argv.index('-o') + 1]
	except (ValueError, IndexError):
		return ''
	if COMPILER.search(prog) and '-c' in argv:
		return f'CC {target}'
	if LINKER.search(prog):
		return f'LD {target}'
	return ''


def proc_table(root: str = '/proc') -> Dict[int, tuple]:
	"""{pid: (parent pid, argv)} of every process that can be read."""
	out: Dict[int, tuple] = {}
	try:
		names = os.listdir(root)
	except OSError:
		return out
	for n in names:
		if not n.isdigit():
			continue
		try:
			with open(f'{root}/{n}/stat', 'rb') as f:
				stat = f.read().decode(errors='replace')
			with open(f'{root}/{n}/cmdline', 'rb') as f:
				argv = [a for a in f.read().decode(errors='replace').split('\0') if a]
			ppid = int(stat.rsplit(')', 1)[1].split()[1])
		except (OSError, ValueError, IndexError):
			continue
		out[int(n)] = (ppid, argv)
	return out


def build_activity(root: int, table: Dict[int, tuple]) -> List[str]:
	"""describe_process() of every descendant of root that is making something."""
	def under(pid: int) -> bool:
		for _ in range(64):
			pid = table.get(pid, (0, []))[0]
			if pid == root:
				return True
			if pid <= 1:
				return False
		return False
	return sorted({d for pid, (_, argv) in table.items() if pid != root and under(pid)
		       for d in [describe_process(argv)] if d})


class Progress:
	"""What the terminal shows of a build or a boot when not verbose.

	label is '<arch> build', '<arch> boot', ...  On a TTY one line, rewritten
	at most once a second; elsewhere a line every `interval` seconds:
	  [09:41:07] x86_64 build 123s: CC fs/ufs/inode.o (+1 more)
	  [09:45:37] x86_64 boot 31s: 12 ok, 1 not ok; in autofs_protocol
	A build shows what its compilers are making (kunit.py build sends make's
	output to /dev/null, so the processes are asked); a boot counts the
	results kunit.py exec printed.  close() prints where it ended."""

	def __init__(self, label: str, out=None, tty: Optional[bool] = None,
		     interval: float = INTERVAL, pid: Optional[int] = None):
		self.label = label
		self.out = out or sys.stdout
		self.tty = (self.out.isatty() and not LINES_ONLY) if tty is None else tty
		self.interval = max(float(interval or INTERVAL), 1.0)
		self.pid = pid
		self.building = label.endswith(' build')
		self.start = self.shown_at = clock()
		self.last = ''
		self.suite = ''
		self.ok = self.not_ok = self.skipped = 0
		self.lines = 0          # progress lines written (not counting close())

	def feed(self, line: str) -> None:
		text = line.strip()
		if not text:
			return
		self.last = text
		m = RESULT_LINE.match(text)
		if m:
			if m.group(1) in ('PASSED', 'SKIPPED'):
				self.ok += 1
				self.skipped += m.group(1) == 'SKIPPED'
			else:
				self.not_ok += 1
			return
		m = SUITE_LINE.match(text)
		if m:
			self.suite = m.group(1)

	def counts(self) -> str:
		return (f'{self.ok} ok, {self.not_ok} not ok'
			+ (f' ({self.skipped} skipped)' if self.skipped else ''))

	def doing(self) -> str:
		if self.building and not (self.ok or self.not_ok):
			acts = build_activity(self.pid, proc_table()) if self.pid else []
			if acts:
				return acts[0] + (f' (+{len(acts) - 1} more)' if len(acts) > 1 else '')
			return self.last
		return self.counts() + (f'; in {self.suite}' if self.suite else '')

	def text(self, now: float) -> str:
		return (f'[{time.strftime("%H:%M:%S")}] {self.label} {now - self.start:.0f}s: '
			f'{self.doing()}')

	def tick(self) -> None:
		now = clock()
		if now - self.shown_at < (1.0 if self.tty else self.interval):
			return
		self.shown_at = now
		self.lines += 1
		if self.tty:
			width = shutil.get_terminal_size((100, 24)).columns - 1
			self.out.write('\r' + self.text(now)[:width] + '\x1b[K')
		else:
			self.out.write(self.text(now) + '\n')
		self.out.flush()

	def close(self, rc: int) -> None:
		now = clock()
		if self.tty and self.lines:
			self.out.write('\r\x1b[K')
		end = f'[{time.strftime("%H:%M:%S")}] {self.label} done in {now - self.start:.0f}s'
		if not self.building or self.ok or self.not_ok:
			end += ': ' + self.counts()
		if rc:
			end += f' (exit {rc})'
		self.out.write(end + '\n')
		self.out.flush()


def next_line(lines: 'queue.Queue[Optional[str]]', timeout: float) -> Optional[str]:
	"""The command's next line; '' when it printed none for `timeout`
	seconds (time to look at the clock); None when its output ended."""
	try:
		return lines.get(timeout=timeout)
	except queue.Empty:
		return ''


def stream(cmd: List[str], log: Path, env: Dict[str, str], verbose: bool,
	   label: str, interval: float = INTERVAL) -> int:
	"""Run cmd, its output (stdout and stderr) all in log; on the terminal
	all of it too when verbose, else Progress."""
	with open(log, 'w') as f:
		f.write('$ ' + ' '.join(cmd) + '\n')
		f.flush()
		proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
					text=True, env=env, errors='replace')
		assert proc.stdout is not None
		if verbose:
			for line in proc.stdout:
				f.write(line)
				sys.stdout.write(line)
			return proc.wait()
		prog = Progress(label, interval=interval, pid=proc.pid)
		lines: 'queue.Queue[Optional[str]]' = queue.Queue()

		def pump() -> None:
			assert proc.stdout is not None
			for line in proc.stdout:
				lines.put(line)
			lines.put(None)
		threading.Thread(target=pump, daemon=True).start()
		while True:
			got = next_line(lines, TICK)
			if got is None:
				break
			if got:
				f.write(got)
				prog.feed(got)
			else:
				f.flush()
			prog.tick()
		rc = proc.wait()
	prog.close(rc)
	return rc
