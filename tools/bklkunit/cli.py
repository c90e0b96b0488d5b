# SPDX-License-Identifier: GPL-2.0
"""Argument parsing and the verbs; the work is done in the other modules."""

import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import VERSION, jsonout
from .analysis import ab, bench, mutate
from .base import deps, paths
from .base.errors import UserError
from .ci import gate, merge, pipeline
from .compare import baseline
from .compare.baseline import Comparison
from .results import export, rundir
from .results.model import ArchResult
from .run import clean, progress, runner
from .run.plan import RunRequest
from .series import checkseries, mail
from .series.checkplan import SeriesOptions
from .source import tree
from .ufsimage import command

DESCRIPTION = """\
Build Debian's linux-source-6.12 with the BKL end-game KUnit series and
boot it in QEMU through the tree's own kunit_tool on eight arches of both
byte orders (x86_64, i386, arm, arm64, riscv64; s390x, powerpc64, m68k):
KTAP, JSON, JUnit, KCIDB and HTML results, checked against baselines.

The main command, `run`, builds and boots x86_64 and s390x, one arch of
each byte order: about 45 minutes cold on 2 busy cores (a rerun with
nothing changed costs the boots); `--arch=all` runs all eight.  Start
with one arch: `./tools/kunit.py run --arch=x86_64` (10-18 minutes
cold)."""

EPILOG = """\
`kunit.py VERB --help` gives a verb's options.  docs/design.md has the
design, docs/results.md how to read results (and the --json shape)."""

# run's (and ab's) options in groups for `run --help`; an option of run
# that no group names fails tools/tests/test_cli.py.
RUN_GROUPS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
	('what to run', ('--arch', '--profile', '--coverage', '--tree', '--apply-series', '--a-side')),
	('the build', ('--jobs', '--parallel', '--kunitconfig', '--kconfig-add', '--no-ccache',
		       '--ccache-dir', '--build-dir', '--always-build')),
	('the guest', ('--timeout', '--suite-timeout', '--smp', '--qemu-args', '--rerun-failures',
		       '--no-crash-rerun')),
	('results', ('--results-dir', '--compare', '--baseline-dir', '--json')),
	('output', ('-v', '--progress-interval')),
	('cache and packages', ('--cache-dir', '--no-install')),
)


def _common(p: argparse.ArgumentParser) -> None:
	p.add_argument('--cache-dir', default=None,
		       help=f'cache for the tree, builds and results (default: ${paths.CACHE_ENV}, '
			    'else $XDG_CACHE_HOME/bkl-kunit, else ~/.cache/bkl-kunit)')
	p.add_argument('--no-install', action='store_true',
		       help='never run apt-get; print the command instead')


def cmd_prepare(args: argparse.Namespace) -> int:
	prep = tree.prepare(paths.cache_dir(args.cache_dir), allow_install=not args.no_install,
			    force=args.force)
	print(f'{prep.path}\n  base {prep.upstream} ({prep.debian_version}) {prep.pristine[:12]}'
	      f'\n  head {prep.head[:12]} with {len(prep.patches)} patches')
	return 0


def cmd_export(args: argparse.Namespace) -> int:
	if args.mail:
		return mail.cmd(paths.cache_dir(args.cache_dir), Path(args.mail).expanduser(),
				verbose=getattr(args, 'verbose', False))
	patches = tree.export(paths.cache_dir(args.cache_dir), force=args.force)
	print(f'Exported {len(patches)} patches to {paths.PATCH_DIR}')
	for p in patches:
		print('  ' + p.name)
	return 0


def cmd_run(args: argparse.Namespace) -> int:
	return runner.main(RunRequest.from_args(args))


def cmd_ab(args: argparse.Namespace) -> int:
	return ab.main(ab.AbRequest.from_args(args))


def cmd_check_series(args: argparse.Namespace) -> int:
	# Every option is checked, against the series, before anything is written.
	opts = SeriesOptions.from_args(args, len(tree.read_series(paths.PATCH_DIR)))
	return checkseries.main(opts, paths.cache_dir(args.cache_dir))


def cmd_fixtures(args: argparse.Namespace) -> int:
	return command.cmd(command.FixturesOptions.from_args(args))


def cmd_mutate(args: argparse.Namespace) -> int:
	cache = paths.cache_dir(args.cache_dir)
	if getattr(args, 'report', None):
		return mutate.report(Path(args.report).resolve())
	return mutate.main(mutate.MutateOptions.from_args(args, cache), cache)


def cmd_deps(args: argparse.Namespace) -> int:
	try:
		arches = paths.parse_arches(args.arch)
	except ValueError as e:
		raise UserError(str(e))
	pkgs = deps.for_arches(arches) + (deps.TEST_PACKAGES if args.with_test else [])
	deps.ensure(pkgs, allow_install=not args.no_install)
	print('All needed Debian packages are installed.')
	return 0


def cmd_report(args: argparse.Namespace) -> int:
	return report(args)[0]


def report(args: argparse.Namespace) -> Tuple[int, Path, Dict[str, Path]]:
	"""`kunit.py report`: (exit status, the results directory, what was written)."""
	if args.results_dir:
		rdir = Path(args.results_dir)
	else:
		rdir = paths.cache_dir(args.cache_dir) / 'results' / 'latest'
	rdir = rdir.resolve()
	summary = rundir.load_summary(rdir)
	ktree = Path(args.tree or summary.get('tree') or '')
	if not (ktree / 'tools' / 'testing' / 'kunit' / 'kunit_parser.py').is_file():
		raise UserError(f'{ktree} has no tools/testing/kunit/kunit_parser.py to read the '
				'consoles with; name a kernel tree with --tree')
	paths.usable_dir(rdir, 'results directory')
	runs: List[ArchResult] = []
	written = export.write_reports(rdir, ktree, args.origin, runs_out=runs)
	for p in written.values():
		print(p)
	if summary.get('complete') is False:
		print(f'kunit.py report: {rdir}: the run ended before its summary.json; read from '
		      f'{rundir.PLAN} and its verdicts: '
		      + ', '.join(f'{e["arch"]} {e["status"]}' for e in summary['arches']),
		      file=sys.stderr)
	damaged = [r for r in runs if r.disagreement]
	for r in damaged:
		print(f'kunit.py report: {r.arch}: {r.disagreement}; reported as {r.status}',
		      file=sys.stderr)
	return (1 if damaged else 0), rdir, written


def cmd_clean(args: argparse.Namespace) -> int:
	clean.clean(paths.cache_dir(args.cache_dir), everything=args.all)
	return 0


def version_line() -> str:
	"""What --version prints: the tool's version, the checkout's commit
	when it is a git checkout, and the formats it writes."""
	try:
		proc = subprocess.run(['git', '-C', str(paths.REPO), 'describe', '--always', '--dirty'],
				      capture_output=True, text=True, timeout=20)
		commit = proc.stdout.strip() if proc.returncode == 0 else ''
	except (OSError, subprocess.SubprocessError):
		commit = ''
	return (f'kunit.py {VERSION}' + (f' (git {commit})' if commit else '')
		+ f'; results format {rundir.FORMAT}, --json format {jsonout.FORMAT}')


class _Version(argparse.Action):
	"""--version: version_line() (git is asked only when it is given)."""

	def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
		     **kw: Any) -> None:
		super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
				 help='print the version and the result formats, then exit')

	def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
		     values: Any, option_string: Optional[str] = None) -> None:
		print(version_line())
		parser.exit()


def group_options(p: argparse.ArgumentParser,
		  groups: Sequence[Tuple[str, Sequence[str]]]) -> None:
	"""Move p's options into titled groups for its --help (argparse has
	no public way to regroup options another module added)."""
	for title, options in groups:
		g = p.add_argument_group(title)
		for action in list(p._actions):
			if action.option_strings and action.option_strings[0] in options:
				for old in p._action_groups:
					if action in old._group_actions and old is not g:
						old._group_actions.remove(action)
				g._group_actions.append(action)


def _json_option(p: argparse.ArgumentParser) -> None:
	p.add_argument('--json', action='store_true',
		       help='print one JSON document on stdout (its shape: docs/results.md, '
			    '"JSON for scripts"), everything else on stderr')


def build_parser() -> argparse.ArgumentParser:
	parser = argparse.ArgumentParser(prog='kunit.py', description=DESCRIPTION, epilog=EPILOG,
					 formatter_class=argparse.RawDescriptionHelpFormatter)
	parser.add_argument('--version', action=_Version)
	sub = parser.add_subparsers(dest='command', required=True, title='verbs', metavar='VERB')

	p = sub.add_parser('prepare', help='unpack the distro tree and apply the series')
	_common(p)
	p.add_argument('--force', action='store_true',
		       help='rebuild the work tree even if it holds work not exported')
	p.set_defaults(func=cmd_prepare)

	p = sub.add_parser('export', help='write the work tree commits to kernel-patches/')
	_common(p)
	p.add_argument('--force', action='store_true',
		       help='overwrite kernel-patches/ even where it was edited since prepare')
	p.add_argument('--mail', metavar='DIR', default=None,
		       help='instead: write kernel-patches/ as one format-patch set per '
			    'subsystem, and the stable requests, into DIR (docs/mail.md)')
	p.set_defaults(func=cmd_export)

	p = sub.add_parser('run', help='build and run the suites on each arch (the default '
			   'x86_64 and s390x: ~45 min cold on 2 cores; start with --arch=x86_64)')
	_common(p)
	runner.add_arguments(p)
	_json_option(p)
	group_options(p, RUN_GROUPS)
	p.set_defaults(func=cmd_run)

	p = sub.add_parser('ab', help='build and run each arch from the pristine tree (A) and '
			   'with the series (B); label every case new, fixed or regressed by the '
			   'series; exit 1 only on a regression or a side that did not build or boot')
	_common(p)
	ab.add_arguments(p)
	group_options(p, RUN_GROUPS)
	p.set_defaults(func=cmd_ab)

	p = sub.add_parser('bench', help='plain kunit.py and our run side by side: cold, warm '
			   'and one-test-edit times, the overhead (docs/speed.md)')
	_common(p)
	bench.add_arguments(p)
	p.set_defaults(func=lambda a: bench.main(bench.BenchOptions.from_args(a)))

	p = sub.add_parser('mutate', help='each lock site and capability check of ufs, appletalk '
			   'and autofs taken out in turn, the kernel rebuilt and the subsystem\'s suites '
			   'booted: killed, survived or did not build (docs/mutate.md)')
	_common(p)
	mutate.add_arguments(p)
	p.set_defaults(func=cmd_mutate)

	p = sub.add_parser('fixtures', help='make (or find) the UFS fixture images, list them, write or check '
				   'the form the kernel carries')
	_common(p)
	command.add_arguments(p)
	p.set_defaults(func=cmd_fixtures)

	p = sub.add_parser('check-series', help='apply, checkpatch and build each patch')
	_common(p)
	checkseries.add_arguments(p)
	p.set_defaults(func=cmd_check_series)

	p = sub.add_parser('test', help='pytest, series checks and KUnit on the CI arches')
	_common(p)
	gate.add_arguments(p)
	p.set_defaults(func=lambda a: gate.main(gate.GateOptions.from_args(a)))

	p = sub.add_parser('deps', help='install the Debian packages the arches need')
	_common(p)
	p.add_argument('--arch', default=','.join(paths.DEFAULT_ARCHES),
		       help=f'as run --arch (default: {",".join(paths.DEFAULT_ARCHES)}; all: every arch)')
	p.add_argument('--with-test', action='store_true', help='also what `make test` needs')
	p.set_defaults(func=cmd_deps)

	p = sub.add_parser('report', help='write junit.xml, kcidb.json and index.html for a run')
	_common(p)
	p.add_argument('results_dir', nargs='?', default=None,
		       help='a results directory of `run` (default: <cache>/results/latest)')
	p.add_argument('--origin', default='bkl_kunit',
		       help='KCIDB origin: the CI system name in every id (default: bkl_kunit)')
	p.add_argument('--tree', default=None,
		       help='kernel tree whose kunit_parser reads the consoles '
			    '(default: the tree in summary.json)')
	_json_option(p)
	p.set_defaults(func=cmd_report)

	p = sub.add_parser('baseline', help='record per-case results of a run as '
			   'kunit/baselines/<arch>.json')
	_common(p)
	baseline.add_arguments(p, 'baseline')
	p.set_defaults(func=lambda a: baseline.cmd_baseline(baseline.BaselineOptions.from_args(a)))

	p = sub.add_parser('compare', help='regressions, fixes, new and flaky cases of a run '
			   'against the baselines; exit 1 only on a regression')
	_common(p)
	baseline.add_arguments(p, 'compare')
	_json_option(p)
	p.set_defaults(func=lambda a: baseline.cmd_compare(baseline.BaselineOptions.from_args(a)))

	p = sub.add_parser('merge', help='the results directories of many jobs (run, check-series; '
			   'other machines too) as one: summary, JUnit, KCIDB and page; refuses jobs '
			   'of different trees or series')
	_common(p)
	merge.add_arguments(p)
	p.set_defaults(func=lambda a: merge.cmd(merge.MergeOptions.from_args(a)))

	p = sub.add_parser('ci-config', help='write the GitLab CI pipeline (.gitlab-ci.yml) from the '
			   'tool\'s arches, profiles and series (docs/ci.md)')
	_common(p)
	pipeline.add_arguments(p)
	p.set_defaults(func=lambda a: pipeline.cmd(pipeline.Pipeline.from_args(a), a.check, a.output))

	p = sub.add_parser('clean', help='remove build directories and results')
	_common(p)
	p.add_argument('--all', action='store_true', help='remove the whole cache')
	p.set_defaults(func=cmd_clean)

	helps = {a.dest: a.help for a in sub._choices_actions}
	for name, p in sub.choices.items():
		# Every verb: -v shows the traceback of an error (run, ab and
		# check-series also stream all output with it).
		if '-v' not in p._option_string_actions:
			p.add_argument('-v', '--verbose', action='store_true',
				       help='on an error, also show its traceback')
		if p.description is None:
			p.description = helps.get(name)
	return parser


# What bad input, a missing tool or a file the user cannot read or write
# raises: one line on stderr and exit status 2, a traceback only with -v.
EXPECTED = (OSError, subprocess.SubprocessError, json.JSONDecodeError, UnicodeError)


def _error_line(e: BaseException) -> str:
	if isinstance(e, OSError) and e.strerror:
		where = f'{e.filename}: ' if e.filename else ''
		return f'{where}{e.strerror}'
	return str(e) or type(e).__name__


def _terminated(signum: int, frame: Any) -> None:
	raise SystemExit(128 + signum)


def main(argv: Optional[List[str]] = None) -> int:
	args = build_parser().parse_args(argv)
	verbose = getattr(args, 'verbose', False)
	# SIGTERM and SIGHUP (unless ignored: nohup) as an exception, so that
	# what is being run is stopped on the way out: kunit.py and QEMU run in
	# sessions of their own (progress.stream), which a signal to our
	# process group does not reach.
	handled = {}
	if threading.current_thread() is threading.main_thread():
		progress.let_children_take_sigint()
		for sig in (signal.SIGTERM, signal.SIGHUP):
			if signal.getsignal(sig) == signal.SIG_DFL:
				handled[sig] = signal.signal(sig, _terminated)
	if getattr(args, 'json', False):
		try:
			return _with_json(args, verbose)
		finally:
			for sig, was in handled.items():
				signal.signal(sig, was)
	try:
		return int(args.func(args))
	except UserError as e:
		if verbose:
			traceback.print_exc()
		print(f'kunit.py {args.command}: error: {e}', file=sys.stderr)
		return e.exit_code
	except EXPECTED as e:
		if verbose:
			traceback.print_exc()
		print(f'kunit.py {args.command}: error: {_error_line(e)}'.replace('\n', ' '),
		      file=sys.stderr)
		return 2
	except KeyboardInterrupt:
		print(f'kunit.py {args.command}: interrupted', file=sys.stderr)
		return 130
	except Exception as e:  # a bug: still one line, the traceback with -v
		if verbose:
			traceback.print_exc()
		print(f'kunit.py {args.command}: internal error: {type(e).__name__}: '
		      f'{_error_line(e)}'.replace('\n', ' ')
		      + ('' if verbose else ' (run again with -v for the traceback)'),
		      file=sys.stderr)
		return 1
	finally:
		for sig, was in handled.items():
			signal.signal(sig, was)


def _json_verb(args: argparse.Namespace) -> Tuple[int, Optional[Path], Optional[Dict[str, Path]],
						  Optional[List[Comparison]]]:
	"""Run a --json verb: (exit status, its results directory, the reports
	written, the comparisons)."""
	if args.command == 'report':
		rc, reported, written = report(args)
		return rc, reported, written, None
	if args.command == 'compare':
		rc, compared, where = baseline.compare_command(baseline.BaselineOptions.from_args(args))
		return rc, where, None, compared
	used: List[Path] = []
	try:
		rc = runner.main(RunRequest.from_args(args), used)
	finally:
		args.json_rdir = used[0] if used else None
	rdir = args.json_rdir
	written = {n: rdir / n for n in ('junit.xml', 'kcidb.json', 'index.html')
		   if rdir and (rdir / n).is_file()}
	comps = None
	if rdir and args.compare and (rdir / 'summary.json').is_file():
		summary = rundir.load_summary(rdir)
		prof = str(summary.get('profile') or 'default')
		bdir = (Path(args.baseline_dir).resolve() if args.baseline_dir
			else baseline.default_dir(prof))
		_, comps, _ = baseline.compare(rdir, baseline.kernel_tree_for(summary, args.tree), bdir,
					       out=io.StringIO(), show_divergence=False)
	return rc, rdir, written, comps


def _with_json(args: argparse.Namespace, verbose: bool) -> int:
	"""A verb with --json: what it prints goes to stderr, then its
	jsonout.document on stdout, whatever happened (an error: its line on
	stderr as without --json, and in "error")."""
	out = sys.stdout
	# The commands it starts (apt-get, git, ...) write to file descriptor
	# 1: that is stderr too until the document is written.
	sys.stdout.flush()
	saved = os.dup(1)
	os.dup2(2, 1)
	try:
		with contextlib.redirect_stdout(sys.stderr):
			doc = _json_document(args, verbose)
	finally:
		sys.stderr.flush()
		os.dup2(saved, 1)
		os.close(saved)
	out.write(json.dumps(doc, indent=1) + '\n')
	out.flush()
	return int(doc['exit_status'])


def _json_document(args: argparse.Namespace, verbose: bool) -> Dict[str, Any]:
	rdir: Optional[Path] = None
	written: Optional[Dict[str, Path]] = None
	comps: Optional[List[Comparison]] = None
	error: Optional[str] = None
	try:
		rc, rdir, written, comps = _json_verb(args)
	except UserError as e:
		rc, error = e.exit_code, str(e).split('\n')[0]
	except EXPECTED as e:
		rc, error = 2, _error_line(e).replace('\n', ' ')
	except KeyboardInterrupt:
		rc, error = 130, 'interrupted'
	except Exception as e:  # a bug: still one line, the traceback with -v
		if verbose:
			traceback.print_exc()
		rc, error = 1, f'internal error: {type(e).__name__}: {_error_line(e)}'.replace('\n', ' ')
	if error:
		print(f'kunit.py {args.command}: error: {error}', file=sys.stderr)
	if rdir is None:
		rdir = getattr(args, 'json_rdir', None)
	return jsonout.document(args.command, rc, rdir, error, written, comps)
