# SPDX-License-Identifier: GPL-2.0
"""Live progress: what the terminal or a CI log shows while kunit.py builds
and boots (progress.py, through progress.stream), with fake processes and a fake
clock."""

import io
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bklkunit import cli
from bklkunit.run import plan, progress
from conftest import TOOLS, WATCHDOG, all_ended, deadline_after

STAMP = r'\[\d\d:\d\d:\d\d\]'


class Clock:
	"""progress.clock that moves on by `step` seconds each time it is read."""

	def __init__(self, step: float = 0.0):
		self.now = 1000.0
		self.step = step

	def __call__(self) -> float:
		self.now += self.step
		return self.now


@pytest.fixture
def clock(monkeypatch):
	c = Clock()
	monkeypatch.setattr(progress, 'clock', c)
	return c


class Tty(io.StringIO):
	def isatty(self):
		return True


def kunit_exec_lines():
	"""What kunit.py exec prints for 12 passing results (one skipped) and one failure."""
	out = ['[07:19:06] Starting KUnit Kernel (1/1)...',
	       '[07:19:09] =============== autofs_protocol (5 subtests) ===============',
	       '[07:19:09] ================== autofs_test_negotiate  ==================']
	out += [f'[07:19:09] [PASSED] v{i} only (min {i}, max {i})' for i in range(8)]
	out += ['[07:19:09] ============== [PASSED] autofs_test_negotiate ==============',
		'[07:19:09] # autofs_test_no_pipe: ASSERTION FAILED at fs/autofs/inode.c:235',
		'[07:19:09] [FAILED] autofs_test_no_pipe',
		'[07:19:09] ================= [FAILED] autofs_protocol =================',
		'[07:19:09] ============== autofs_end_state (4 subtests) ===============',
		'[07:19:09] [PASSED] autofs_end_state_bkl_gone',
		'[07:19:09] [PASSED] autofs_end_state_smbfs_gone',
		'[07:19:09] [SKIPPED] autofs_end_state_symbols',
		'[07:19:09] [PASSED] autofs_end_state_autofs3_gone',
		'[07:19:09] ================ [PASSED] autofs_end_state =================',
		'[07:19:09] Testing complete. Ran 13 tests: passed: 11, failed: 1, skipped: 1']
	return out


# ------------------------------------------------------------ what a build makes


def test_describe_process():
	d = progress.describe_process
	assert d(['ccache', 'gcc', '-Wp,-MMD', '-c', '-o', 'fs/ufs/inode.o', 'x.c']) == \
		'CC fs/ufs/inode.o'
	assert d(['aarch64-linux-gnu-gcc', '-c', '-o', 'kernel/fork.o', 'fork.c']) == \
		'CC kernel/fork.o'
	assert d(['/usr/bin/gcc-12', '-c', '-o', 'a.o', 'a.c']) == 'CC a.o'
	assert d(['ld', '-m', 'elf_x86_64', '-o', 'vmlinux.o']) == 'LD vmlinux.o'
	assert d(['arm-linux-gnueabihf-ld', '-o', '.tmp_vmlinux1']) == 'LD .tmp_vmlinux1'
	# cc1 writes a temporary .s; make, sh and a compiler that only links are not shown.
	assert d(['/usr/lib/gcc/x86_64-linux-gnu/12/cc1', '-quiet', '-o', '/tmp/cc.s']) == ''
	assert d(['make', '-f', 'scripts/Makefile.build', 'obj=fs/ufs']) == ''
	assert d(['sh', '-c', 'gcc -c -o a.o a.c']) == ''
	assert d(['gcc', '-o', 'scripts/kallsyms', 'kallsyms.c']) == ''
	assert d(['gcc', '-c', '-o']) == ''
	assert d([]) == ''


def test_build_activity_is_what_the_descendants_make():
	table = {
		100: (1, ['python3', 'kunit.py', 'build']),
		101: (100, ['make', 'all']),
		102: (101, ['make', '-f', 'scripts/Makefile.build']),
		103: (102, ['ccache', 'gcc', '-c', '-o', 'fs/ufs/inode.o', 'inode.c']),
		104: (103, ['gcc', '-c', '-o', 'fs/ufs/inode.o', 'inode.c']),     # same object
		105: (104, ['cc1', '-o', '/tmp/ccX.s']),
		106: (102, ['ccache', 'gcc', '-c', '-o', 'fs/ufs/balloc.o', 'balloc.c']),
		200: (1, ['gcc', '-c', '-o', 'someone/else.o', 'else.c']),        # not ours
		300: (300, ['weird', '-c', '-o', 'loop.o']),                      # a cycle
	}
	assert progress.build_activity(100, table) == ['CC fs/ufs/balloc.o', 'CC fs/ufs/inode.o']
	assert progress.build_activity(101, table) == ['CC fs/ufs/balloc.o', 'CC fs/ufs/inode.o']
	assert progress.build_activity(999, table) == []


def test_proc_table_and_build_activity_of_real_processes(tmp_path):
	"""A real process tree: sh, under it a `gcc` (python under that name).
	The `gcc` says when it runs and then waits to be killed: no deadline."""
	gcc = tmp_path / 'gcc'
	gcc.symlink_to(sys.executable)
	parent = subprocess.Popen(['sh', '-c', f'{gcc} -c "import sys; print(1, flush=True); '
				   'sys.stdin.read()" -o fs/ufs/inode.o; true'],
				  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
	try:
		assert parent.stdout.readline().strip() == '1'      # it runs, under sh
		acts = progress.build_activity(parent.pid, progress.proc_table())
		assert acts == ['CC fs/ufs/inode.o']
		table = progress.proc_table()
		assert table[os.getpid()][1][0].endswith(('python3', 'python', 'pytest'))
		assert table[parent.pid][0] == os.getpid()
	finally:
		for pid, (ppid, _) in progress.proc_table().items():
			if ppid == parent.pid:
				os.kill(pid, 9)
		parent.kill()
		parent.communicate()


def test_proc_table_without_proc(tmp_path):
	assert progress.proc_table(str(tmp_path / 'nothing')) == {}


# ------------------------------------------------------------------ Progress


def test_progress_in_a_log_is_a_line_every_interval(clock):
	out = io.StringIO()
	p = progress.Progress('x86_64 boot', out=out, interval=30)
	lines = kunit_exec_lines()
	for i, line in enumerate(lines):
		clock.now += 4            # a result every 4 s
		p.feed(line + '\n')
		p.tick()
	shown = out.getvalue().splitlines()
	# 22 lines over 88 s: a line at 32 and at 64 s, never two within 30 s.
	assert len(lines) == 22
	assert len(shown) == 2 == p.lines
	for line in shown:
		assert re.fullmatch(STAMP + r' x86_64 boot \d+s: \d+ ok, \d not ok.*', line), line
	assert shown[0].endswith(' 32s: 5 ok, 0 not ok; in autofs_protocol')
	assert shown[1].endswith(' 64s: 8 ok, 1 not ok; in autofs_end_state')
	p.close(1)
	last = out.getvalue().splitlines()[-1]
	assert re.fullmatch(STAMP + r' x86_64 boot done in 88s: 12 ok, 1 not ok '
			    r'\(1 skipped\) \(exit 1\)', last), last


def test_progress_boot_counts_only_result_lines(clock):
	p = progress.Progress('arm64 boot', out=io.StringIO())
	for line in kunit_exec_lines():
		p.feed(line)
	assert (p.ok, p.not_ok, p.skipped) == (12, 1, 1)
	assert p.suite == 'autofs_end_state'
	assert p.doing() == '12 ok, 1 not ok (1 skipped); in autofs_end_state'


def test_progress_on_a_tty_rewrites_one_line(clock, monkeypatch):
	monkeypatch.setattr(progress.shutil, 'get_terminal_size', lambda fallback: os.terminal_size((60, 20)))
	out = Tty()
	p = progress.Progress('i386 boot', out=out, interval=30)
	assert p.tty
	for line in kunit_exec_lines()[:6]:
		clock.now += 0.5          # at most once a second
		p.feed(line)
		p.tick()
	text = out.getvalue()
	assert '\n' not in text
	frames = text.split('\r')[1:]
	assert len(frames) == 3
	for f in frames:
		assert f.endswith('\x1b[K')
		assert len(f) - len('\x1b[K') <= 59                  # fits the terminal
		assert re.match(STAMP + r' i386 boot \d+s: \d ok', f), f
	p.close(0)
	tail = out.getvalue()[len(text):]
	assert tail.startswith('\r\x1b[K')                    # the line is cleared
	assert re.fullmatch(r'\r\x1b\[K' + STAMP + r' i386 boot done in 3s: 3 ok, 0 not ok\n', tail)


def test_progress_build_shows_the_last_line_without_compilers(clock):
	out = io.StringIO()
	p = progress.Progress('arm build', out=out, interval=30, pid=None)
	p.feed('[07:18:41] Building KUnit Kernel ...\n')
	p.feed('Building with:\n')
	clock.now += 31
	p.tick()
	assert re.fullmatch(STAMP + r' arm build 31s: Building with:\n', out.getvalue())
	p.close(0)
	assert re.search(STAMP + r' arm build done in 31s\n$', out.getvalue())


def test_progress_build_shows_what_is_being_compiled(clock, monkeypatch):
	monkeypatch.setattr(progress, 'proc_table', lambda: {
		50: (42, ['make']), 51: (50, ['ccache', 'gcc', '-c', '-o', 'fs/ufs/inode.o']),
		52: (50, ['ccache', 'gcc', '-c', '-o', 'fs/ufs/dir.o'])})
	out = io.StringIO()
	p = progress.Progress('x86_64 (pristine) build', out=out, interval=30, pid=42)
	p.feed('Building with:\n')
	clock.now += 123
	p.tick()
	assert re.fullmatch(STAMP + r' x86_64 \(pristine\) build 123s: CC fs/ufs/dir.o '
			    r'\(\+1 more\)\n', out.getvalue())


# ------------------------------------------------------------------ _stream

FAKE_EXEC = r'''
import sys, time
for line in sys.stdin.read().splitlines():
	print(line, flush=True)
'''

QUIET_BUILD = r'''
print('[07:18:41] Building KUnit Kernel ...', flush=True)
print('Building with:', flush=True)
print('[07:19:06] Elapsed time: 24.546s', flush=True)
'''


def _stream_script(tmp_path, script, label, verbose=False, interval=30, stdin=''):
	path = tmp_path / 'fake.py'
	path.write_text(script)
	src = tmp_path / 'stdin.txt'
	src.write_text(stdin)
	log = tmp_path / 'out.log'
	cmd = ['sh', '-c', f'{sys.executable} {path} < {src}']
	rc = progress.stream(cmd, log, dict(os.environ), verbose, label, interval)
	return rc, log.read_text()


def test_stream_to_a_log_keeps_everything_and_prints_progress(tmp_path, clock, capsys):
	clock.step = 7                   # every look at the clock is 7 s later
	lines = kunit_exec_lines()
	rc, log = _stream_script(tmp_path, FAKE_EXEC, 'x86_64 boot', stdin='\n'.join(lines) + '\n')
	assert rc == 0
	assert log.splitlines()[0].startswith('$ sh -c ')
	assert log.splitlines()[1:] == lines                   # the log has every line
	out = capsys.readouterr().out
	assert '[PASSED]' not in out and 'ASSERTION' not in out    # no wall of output
	shown = out.splitlines()
	assert len(shown) >= 2
	for line in shown[:-1]:
		assert re.fullmatch(STAMP + r' x86_64 boot \d+s: \d+ ok, \d not ok.*', line), line
	assert re.fullmatch(STAMP + r' x86_64 boot done in \d+s: 12 ok, 1 not ok \(1 skipped\)',
			    shown[-1])


def test_stream_ticks_while_the_command_is_silent(tmp_path, clock, capsys, monkeypatch):
	"""kunit.py build sends make's output to /dev/null: minutes without a line.

	Deterministic whatever the machine's load: the silence is scripted
	(five waits that time out, right after "Building with:"), every other
	wait blocks until the command's next line, and the clock is fake (10 s
	a look).  So the ticks are: a line (10 s), a line (20 s), five
	silences (30 s: shown, 40, 50, 60: shown, 70), the last line (80 s)."""
	silences = []

	def scripted(lines, timeout):
		if silences:
			return silences.pop()
		line = lines.get()
		if line and line.strip() == 'Building with:':
			silences.extend([''] * 5)
		return line
	monkeypatch.setattr(progress, 'next_line', scripted)
	clock.step = 10
	rc, log = _stream_script(tmp_path, QUIET_BUILD, 'arm64 build', interval=30)
	assert rc == 0 and 'Elapsed time' in log
	shown = capsys.readouterr().out.splitlines()
	ticks = [l for l in shown if ' done in ' not in l]
	assert len(ticks) == 2
	assert all(re.fullmatch(STAMP + r' arm64 build (30|60)s: Building with:', l)
		   for l in ticks), ticks
	assert re.fullmatch(STAMP + r' arm64 build done in \d+s', shown[-1])


def test_stream_verbose_streams_everything(tmp_path, clock, capsys):
	lines = kunit_exec_lines()
	rc, log = _stream_script(tmp_path, FAKE_EXEC, 'x86_64 boot', verbose=True,
				 stdin='\n'.join(lines) + '\n')
	assert rc == 0
	assert capsys.readouterr().out.splitlines() == lines
	assert log.splitlines()[1:] == lines


def test_stream_exit_status_and_tty(tmp_path, clock, monkeypatch):
	out = Tty()
	monkeypatch.setattr(sys, 'stdout', out)
	clock.step = 2
	rc, _ = _stream_script(tmp_path, FAKE_EXEC + 'sys.exit(3)\n', 'um boot',
			       stdin='\n'.join(kunit_exec_lines()) + '\n')
	assert rc == 3
	text = out.getvalue()
	assert text.count('\n') == 1 and text.endswith(' (exit 3)\n')
	assert '\r' in text and 'um boot' in text


def test_progress_interval_option():
	args = cli.build_parser().parse_args(['run'])
	assert args.progress_interval == plan.PROGRESS_INTERVAL == progress.INTERVAL == 30
	args = cli.build_parser().parse_args(['run', '--progress-interval', '5'])
	assert args.progress_interval == 5


# ------------------------------------------------------- a deadline (kunit.py exec)
#
# Commands that never end, with a deadline of a second: each is still
# running at its deadline, whatever the machine's load.  Where a test
# checks what the command printed first, its deadline passes only once that
# is printed (conftest.deadline_after: the clock stands still until then).
# WATCHDOG (conftest.all_ended) only guards against a hang of the test.
# The commands that must end on SIGINT are Python, which does whenever
# SIGINT comes (before its handler: the default action; after it:
# KeyboardInterrupt); sh catches it while it runs -c and may not act on
# one that came before it started its child.

# Prints x, its pid (its process group's id) and that of a child that
# ignores SIGINT from its start (as a grandchild of kunit.py might), then
# waits for ever.  It takes SIGINT as KeyboardInterrupt whatever it
# inherited: a Python started with SIGINT ignored keeps it ignored (seen
# once in a `make test` started in the background), and would then be
# the DEAF command below.
_TREE = ('import os, signal, subprocess, time; print("x", flush=True); '
	 'print(os.getpid(), flush=True); child = subprocess.Popen(["sleep", "1000"], '
	 'preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)); '
	 'print(child.pid, flush=True); time.sleep(1000)')
TREE = 'import signal; signal.signal(signal.SIGINT, signal.default_int_handler); ' + _TREE
# The same, but the command itself ignores SIGINT.
DEAF = 'import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); ' + _TREE
# Prints its pid, closes its output, waits for ever.
CLOSED = ('import os, time; print(os.getpid(), flush=True); os.close(1); os.close(2); '
	  'time.sleep(1000)')
KILLED = ('[bkl-kunit] still running 1 s after it was started (its deadline): '
	  'stopped (SIGINT to its process group)')


def _deadline_stream(tmp_path, cmd, verbose=False, deadline=1.0):
	log = tmp_path / 'kunit.log'
	rc = progress.stream(cmd, log, dict(os.environ), verbose, 'x86_64 boot', deadline=deadline)
	return rc, log.read_text().splitlines()


def py(script):
	return [sys.executable, '-c', script]


def test_stream_kills_a_command_past_its_deadline(tmp_path, monkeypatch):
	"""On the real clock; whether sh got to start sleep by then or not, it
	is stopped (SIGINT to both, or SIGKILL 10 s later if sh sat on it)."""
	monkeypatch.setattr(progress, 'STOP_GRACE', 10.0)
	rc, log = _deadline_stream(tmp_path, ['sh', '-c', 'echo x; sleep 1000'])
	assert rc == progress.PAST_DEADLINE and log[-1].startswith(KILLED[:-1])


@pytest.mark.parametrize('verbose', [False, True], ids=['progress', 'verbose'])
def test_stream_kills_a_command_past_its_deadline_and_its_children(tmp_path, capsys,
								    monkeypatch, verbose):
	deadline_after(monkeypatch, 3)
	rc, log = _deadline_stream(tmp_path, py(TREE), verbose)
	assert rc == progress.PAST_DEADLINE
	# (the command shell-quoted: shlex.join, so that it can be run again as it is)
	assert log[0] == '$ ' + shlex.join([sys.executable, '-c', TREE]) and log[1] == 'x'   # the output is kept
	group, child = int(log[2]), int(log[3])
	# It ended on SIGINT (KeyboardInterrupt); its child, which ignores
	# SIGINT, got SIGKILL with the rest of the group.
	assert 'KeyboardInterrupt' in log and log[-1] == KILLED
	assert all_ended([group, child], group=group)
	out = capsys.readouterr().out.splitlines()
	if verbose:
		assert out == log[1:]            # all of it, the last line too
	else:
		assert re.fullmatch(STAMP + r' x86_64 boot done in \d+s: 0 ok, 0 not ok '
				    r'\(stopped: past its deadline, or repeating one line\)', out[-1]), out


def test_stream_kills_a_command_that_ignores_sigint(tmp_path, monkeypatch):
	deadline_after(monkeypatch, 3)
	monkeypatch.setattr(progress, 'STOP_GRACE', 0.5)
	rc, log = _deadline_stream(tmp_path, py(DEAF))
	assert rc == progress.PAST_DEADLINE and log[1] == 'x' and 'KeyboardInterrupt' not in log
	assert log[-1] == ('[bkl-kunit] still running 1 s after it was started (its deadline): '
			   'stopped (SIGINT to its process group, SIGKILL 0.5 s later)')
	assert all_ended([int(log[2]), int(log[3])], group=int(log[2]))


def test_stream_kills_a_command_that_never_stops_printing(tmp_path, monkeypatch):
	"""Like kunit.py exec when its parser loops: a '[CRASHED] ' line for
	each Test it makes up, for ever.  (yes ends on SIGINT, and sh, which
	waits for it, with it.)"""
	deadline_after(monkeypatch, 2)
	monkeypatch.setattr(progress, 'REPEAT_LIMIT', 10**9)   # the deadline stops it here
	rc, log = _deadline_stream(tmp_path, ['sh', '-c', 'echo $$; yes "[07:01:03] [CRASHED] "'])
	assert rc == progress.PAST_DEADLINE
	assert log[2] == '[07:01:03] [CRASHED] ' and log[-1] == KILLED
	assert all_ended([int(log[1])], group=int(log[1]))


# Prints its pid, then argv[1] lines of '[HH:MM:SS] [CRASHED] ' (the stamp
# counting up: kunit.py stamps every line), then sleeps unless argv[2] says end.
REPEATS = ('import os, sys, time\n'
	   'print(os.getpid(), flush=True)\n'
	   'for i in range(int(sys.argv[1])):\n'
	   '    print("[%02d:%02d:%02d] [CRASHED] " % (i // 3600 % 24, i // 60 % 60, i % 60))\n'
	   'sys.stdout.flush()\n'
	   'if sys.argv[2] != "end":\n'
	   '    time.sleep(1000)\n')


def test_stream_stops_a_command_that_repeats_one_line(tmp_path, monkeypatch):
	"""kunit.py exec in the parser's loop prints one line for ever; it is
	stopped after REPEAT_LIMIT of them in a row, long before its deadline,
	however the stamps in front of them go."""
	monkeypatch.setattr(progress, 'REPEAT_LIMIT', 50)
	rc, log = _deadline_stream(tmp_path, py(REPEATS) + ['1000', 'sleep'], deadline=3600)
	assert rc == progress.PAST_DEADLINE
	assert log[-1] == ('[bkl-kunit] printed one line 50 times in a row: '
			   'stopped (SIGINT to its process group)')
	assert sum(l.endswith('] [CRASHED] ') for l in log) >= 50   # and what it printed as it ended
	pid = next(int(l) for l in log if l.isdigit())
	assert all_ended([pid], group=pid)


def test_stream_lets_a_command_repeat_one_line_fewer_times(tmp_path, monkeypatch):
	monkeypatch.setattr(progress, 'REPEAT_LIMIT', 50)
	rc, log = _deadline_stream(tmp_path, py(REPEATS) + ['49', 'end'], deadline=3600)
	assert rc == 0 and sum(l.endswith('] [CRASHED] ') for l in log) == 49
	assert not log[-1].startswith('[bkl-kunit]')


def test_stream_counts_repeats_only_with_a_deadline(tmp_path, monkeypatch):
	"""A build (no deadline) may print what it likes."""
	monkeypatch.setattr(progress, 'REPEAT_LIMIT', 50)
	log = tmp_path / 'build.log'
	rc = progress.stream(py(REPEATS) + ['200', 'end'], log, dict(os.environ), False, 'build')
	assert rc == 0 and log.read_text().count('] [CRASHED] \n') == 200


def test_stream_kills_a_command_that_closed_its_output(tmp_path, monkeypatch):
	deadline_after(monkeypatch, 1)
	rc, log = _deadline_stream(tmp_path, py(CLOSED))
	assert rc == progress.PAST_DEADLINE and log[-1] == KILLED
	assert all_ended([int(log[1])], group=int(log[1]))


def test_stream_within_its_deadline_is_as_without(tmp_path, capsys):
	rc, log = _deadline_stream(tmp_path, ['sh', '-c', 'echo x; exit 3'], deadline=3600)
	assert rc == 3 and log[1:] == ['x']
	assert capsys.readouterr().out.rstrip().endswith(' (exit 3)')


def test_an_interrupted_stream_stops_its_command(tmp_path, monkeypatch):
	"""^C reaches run, not the command's session: stream() stops it."""
	seen = []
	real = progress.next_line

	def interrupted(lines, timeout):
		got = real(lines, timeout)
		if got:
			seen.append(got.strip())
		if len(seen) == 3:
			raise KeyboardInterrupt
		return got
	monkeypatch.setattr(progress, 'next_line', interrupted)
	with pytest.raises(KeyboardInterrupt):
		progress.stream(py(TREE), tmp_path / 'log', dict(os.environ), False, 'arm build')
	assert seen[0] == 'x' and all_ended([int(seen[1]), int(seen[2])], group=int(seen[1]))
	assert progress._running == {}


def test_stop_all_stops_every_command_and_starts_none(tmp_path):
	"""run --parallel interrupted: the commands of the other threads."""
	got = {}
	log = tmp_path / 'log'

	def one():
		got['rc'] = progress.stream(py(TREE), log, dict(os.environ), False, 'arm boot')

	def started():          # its three lines, after the command line
		return log.exists() and len(log.read_text().splitlines()) == 4
	t = threading.Thread(target=one)
	t.start()
	until = time.monotonic() + WATCHDOG
	while not started():          # in the log within a TICK
		assert time.monotonic() < until, 'the command did not start'
		time.sleep(0.05)
	try:
		progress.stop_all()
		t.join(WATCHDOG)
		assert not t.is_alive()
		lines = log.read_text().splitlines()
		assert got['rc'] != 0 and all_ended([int(lines[2]), int(lines[3])], group=int(lines[2]))
		with pytest.raises(KeyboardInterrupt):
			progress.stream(['true'], tmp_path / 'log2', dict(os.environ), False, 'x')
	finally:
		progress.stop_all_done()
	assert progress.stream(['true'], tmp_path / 'log2', dict(os.environ), False, 'x') == 0


def test_children_take_sigint_where_we_were_started_with_it_ignored():
	"""`&` in a non-interactive shell starts us with SIGINT ignored, which
	every child would inherit; after let_children_take_sigint() they start
	with the default."""
	child = ('import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)')
	script = ('import signal, subprocess, sys\n'
		  f'sys.path.insert(0, {str(TOOLS)!r})\n'
		  'from bklkunit.run import progress\n'
		  'signal.signal(signal.SIGINT, signal.SIG_IGN)\n'
		  f'subprocess.run([sys.executable, "-c", {child!r}])\n'
		  'progress.let_children_take_sigint()\n'
		  f'subprocess.run([sys.executable, "-c", {child!r}])\n')
	out = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
			     check=True).stdout.split()
	assert out == ['True', 'False']


def test_a_command_in_a_session_of_its_own_keeps_the_callers_niceness(tmp_path):
	"""A command stream() starts at nice 3 (a `kunit.py run` beside
	check-series) has its session's autogroup at nice 3 too: otherwise the
	scheduler gives that session as much of the CPUs as the caller's.
	Without autogroups (no /proc/self/autogroup) it still runs."""
	script = tmp_path / 'caller.py'
	wait = ('for i in $(seq 200); do a=$(cat /proc/self/autogroup) || { echo none; exit 0; }; '
		'case "$a" in *" nice 0") sleep 0.05;; *) break;; esac; done; echo "$a"')
	script.write_text(
		f'WAIT = {wait!r}\n'
		'import sys\n'
		f'sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n'
		'from pathlib import Path\n'
		'from bklkunit.run import progress\n'
		# stream() sets the group's niceness once the command started:
		# the command waits for it (at most 10 s), then shows it.
		'rc = progress.stream(["sh", "-c", WAIT],\n'
		'		     Path(sys.argv[1]), {"PATH": "/usr/bin:/bin"}, False, "x")\n'
		'sys.exit(rc)\n')
	log = tmp_path / 'cmd.log'
	proc = subprocess.run(['nice', '-n', '3', sys.executable, str(script), str(log)],
			      capture_output=True, text=True, timeout=60)
	assert proc.returncode == 0, proc.stderr
	out = log.read_text().splitlines()[-1]
	if Path('/proc/self/autogroup').exists():
		# 3 above this process's own niceness (pytest may run niced).
		assert out.endswith(f' nice {min(os.nice(0) + 3, 19)}'), out
		# and this process's own group is not the command's.  Empty: this
		# process is in the default group, no autogroup (a child of an
		# init that never made a session, as under CI's runner).
		own = Path('/proc/self/autogroup').read_text().split()
		assert own[:1] != out.split()[:1], (own, out)
	else:
		assert out == 'none'
