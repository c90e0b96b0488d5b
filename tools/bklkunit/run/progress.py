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
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, TextIO, Tuple

from ..results import kunit_tool

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


def proc_table(root: str = '/proc') -> Dict[int, Tuple[int, List[str]]]:
	"""{pid: (parent pid, argv)} of every process that can be read."""
	out: Dict[int, Tuple[int, List[str]]] = {}
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


def build_activity(root: int, table: Dict[int, Tuple[int, List[str]]]) -> List[str]:
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

	def __init__(self, label: str, out: Optional[TextIO] = None, tty: Optional[bool] = None,
		     interval: float = INTERVAL, pid: Optional[int] = None) -> None:
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
		if rc == PAST_DEADLINE:
			end += ' (stopped: past its deadline, or repeating one line)'
		elif rc:
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


# A command with a deadline that prints one line this many times in a row
# (kunit.py's "[HH:MM:SS] " stamp aside) is stopped at once, as at its
# deadline: kunit.py exec caught in the 6.12 parser's loop prints
# "[CRASHED] " for ever, about 40,000 lines and 18 MB of its own memory a
# second, which the deadline alone would let grow for minutes.  kunit.py
# prints one line per case, suite or message, never one line this often.
REPEAT_LIMIT = 100_000
_STAMP_RE = re.compile(r'^\[\d\d:\d\d:\d\d\] ')
# What stream() returns for a command it killed at its deadline: no process
# exits with it (an exit status is 0-255, a signal -1 to -64).
PAST_DEADLINE = 1000
# Seconds a command stopped with SIGINT (at its deadline, or when run is
# interrupted) may take to end before every process of its session gets
# SIGKILL.  A watchdog, not a measure: kunit.py ends on SIGINT, writing out
# the console it has read (its test.log, which SIGKILL would cut), in about
# 5 s per GB its looping parser has grown to (some 20 GB at most by a
# kasan deadline: docs/design.md).
STOP_GRACE = 300.0
# Seconds of silence after which stream() stops reading the output of a
# command it killed (some process outside its session holds the pipe).
DRAIN_LIMIT = 60.0

# The commands stream() is running, and whether stop_all() was called.
_running: Dict[int, 'subprocess.Popen[str]'] = {}
_running_lock = threading.Lock()
_stopping = threading.Event()


def niced(cmd: List[str], nice: int) -> List[str]:
	"""cmd started nice steps nicer than its caller (`nice -n`); cmd
	itself when nice is 0."""
	return (['nice', '-n', str(nice)] if nice else []) + cmd


def _keep_niceness(pid: int) -> None:
	"""Give the new session of command pid (start_new_session) the
	niceness of this process.  With the scheduler's autogroups (on in
	Debian's kernels) a session is a group of its own, which competes with
	the other sessions as an equal whatever the niceness of its processes:
	a command started at nice 10 beside a build would take half the CPUs.
	The group's niceness is /proc/<pid>/autogroup, which covers every
	process of the session, those it forked already included."""
	nice = os.nice(0)
	if nice:
		try:
			with open(f'/proc/{pid}/autogroup', 'w') as f:
				f.write(f'{nice}\n')
		except OSError:
			pass    # no autogroups: the processes' niceness is all there is


def _signal_group(proc: 'subprocess.Popen[str]', sig: int) -> None:
	"""sig to every process of the command's session (its process group,
	whose id is its pid: start_new_session)."""
	try:
		os.killpg(proc.pid, sig)
	except (ProcessLookupError, PermissionError):
		pass        # every process of it has ended


def _stop(proc: 'subprocess.Popen[str]', lines: 'Optional[queue.Queue[Optional[str]]]' = None,
	  keep: Optional[Callable[[str], None]] = None) -> str:
	"""End the command and every process of its session: SIGINT (what ^C on
	a terminal sends it), up to STOP_GRACE seconds for the command to end,
	then SIGKILL to whatever is left of the group (QEMU, a grandchild that
	ignores SIGINT).  While it ends, its lines go to keep (when given).
	How it ended, for the log."""
	how = 'SIGINT to its process group'
	_signal_group(proc, signal.SIGINT)
	try:
		if lines is None or keep is None:
			proc.wait(timeout=STOP_GRACE)
		else:
			until = clock() + STOP_GRACE
			while proc.poll() is None:
				left = until - clock()
				if left <= 0:
					raise subprocess.TimeoutExpired(proc.args, STOP_GRACE)
				got = next_line(lines, min(TICK, left))
				if got is None:             # its output ended: now the process
					lines.put(None)         # (and the end for the caller)
					proc.wait(timeout=max(0.0, until - clock()))
					break
				if got:
					keep(got)
	except subprocess.TimeoutExpired:
		how += f', SIGKILL {STOP_GRACE:g} s later'
	finally:
		_signal_group(proc, signal.SIGKILL)   # whatever is left of the group
		proc.wait()
	return how


def let_children_take_sigint() -> None:
	"""stream() stops a command with SIGINT first (kunit.py then writes its
	console out).  A process started with SIGINT ignored (`&` in a
	non-interactive shell, some CI runners) passes that on to every child,
	which then sits out STOP_GRACE until SIGKILL: give SIGINT Python's
	default handler again, so that children start with SIG_DFL.  Main
	thread only (cli.main, the tests' conftest)."""
	if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
		signal.signal(signal.SIGINT, signal.default_int_handler)


def stop_all() -> None:
	"""Stop every command stream() is running (as _stop()), and make every
	stream() started from now on raise KeyboardInterrupt, until
	stop_all_done(): run --parallel when interrupted (its commands run in
	sessions of their own, which ^C on the terminal does not reach)."""
	_stopping.set()
	with _running_lock:
		procs = list(_running.values())
	for proc in procs:
		_stop(proc)


def stop_all_done() -> None:
	_stopping.clear()


def _pump(proc: 'subprocess.Popen[str]', lines: 'queue.Queue[Optional[str]]') -> None:
	assert proc.stdout is not None
	for line in proc.stdout:
		lines.put(line)
	lines.put(None)


def stream(cmd: List[str], log: Path, env: Dict[str, str], verbose: bool,
	   label: str, interval: float = INTERVAL, deadline: Optional[float] = None) -> int:
	"""Run cmd, its output (stdout and stderr) all in log; on the terminal
	all of it too when verbose, else Progress.  Its exit status.

	cmd runs in a session of its own (its process group: kunit.py and the
	QEMU under it), with stdin /dev/null.  deadline: seconds after the
	start; a command still running then is stopped with every process of
	its group (_stop: SIGINT, SIGKILL STOP_GRACE seconds later for what is
	left), the log ends with a line saying so, and the status is
	PAST_DEADLINE.  Its output is read while it runs, so a command that
	never stops printing is stopped as well, and one that prints the same
	line REPEAT_LIMIT times in a row is stopped then (PAST_DEADLINE too).  If stream() itself is
	interrupted (^C, which does not reach the command's session), the
	command is stopped the same way before the exception goes on."""
	if _stopping.is_set():
		raise KeyboardInterrupt('stopping: no new command')
	with open(log, 'w') as f:
		f.write('$ ' + shlex.join(cmd) + '\n')
		f.flush()
		proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
					stdin=subprocess.DEVNULL, text=True, env=env,
					errors='replace', start_new_session=True)
		_keep_niceness(proc.pid)
		with _running_lock:
			_running[proc.pid] = proc
		prog = None if verbose else Progress(label, interval=interval, pid=proc.pid)
		try:
			rc = _follow(proc, f, verbose, prog, deadline)
		except BaseException:
			if proc.returncode is None:
				_stop(proc)
			raise
		finally:
			with _running_lock:
				_running.pop(proc.pid, None)
	if prog is not None:
		prog.close(rc)
	return rc


def _follow(proc: 'subprocess.Popen[str]', f: Any, verbose: bool, prog: Optional[Progress],
	    deadline: Optional[float]) -> int:
	"""stream()'s reading of the command's output, to its end or its deadline."""
	lines: 'queue.Queue[Optional[str]]' = queue.Queue()
	threading.Thread(target=_pump, args=(proc, lines), daemon=True).start()

	last = ['\n']               # the end of what was kept

	def keep(line: str) -> None:
		last[0] = line[-1:]
		f.write(line)
		if verbose:
			sys.stdout.write(line)
		elif prog is not None:
			prog.feed(line)

	until = None if deadline is None else clock() + deadline
	ended = False               # its output ended
	same, prev = 0, ''          # how often in a row it printed prev
	while True:
		wait = TICK
		if until is not None:
			left = until - clock()
			if left <= 0:
				if ended and proc.poll() is not None:
					return proc.returncode      # it did end, just now
				break
			wait = min(TICK, left)
		if ended:
			# No more output, but still running (with a deadline only).
			try:
				return proc.wait(timeout=wait)
			except subprocess.TimeoutExpired:
				continue
		got = next_line(lines, wait)
		if got is None:
			if until is None:
				return proc.wait()
			ended = True
			continue
		if got:
			keep(got)
			if until is not None:
				got = _STAMP_RE.sub('', got)
				same, prev = (same + 1, prev) if got == prev else (1, got)
				if same >= REPEAT_LIMIT:
					break
		else:
			f.flush()
			if verbose:
				sys.stdout.flush()
		if prog is not None:
			prog.tick()
	# Past the deadline, or repeating itself.
	how = _stop(proc, None if ended else lines, keep)
	while not ended:            # what it printed as it ended
		got = next_line(lines, DRAIN_LIMIT)
		if not got:
			break
		keep(got)
	# On a line of its own, also after a line the command was killed in.
	why = (f'printed one line {same:,} times in a row' if same >= REPEAT_LIMIT else
	       f'still running {deadline:g} s after it was started (its deadline)')
	note = ('' if last[0] == '\n' else '\n') + f'[bkl-kunit] {why}: stopped ({how})\n'
	f.write(note)
	if verbose:
		sys.stdout.write(note)
	return PAST_DEADLINE
