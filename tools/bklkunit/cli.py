# SPDX-License-Identifier: GPL-2.0
"""Argument parsing and the verbs; the work is done in the other modules."""

import argparse
import json
import shutil
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, List, Optional

from . import (ab, baseline, bench, ciconfig, deps, export, fixturecmd, mail, merge, mutate, paths,
	       progress, run, rundir, selftest, seriescheck, tree)
from .errors import UserError
from .results import ArchRun


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
		return mail.cmd(args)
	patches = tree.export(paths.cache_dir(args.cache_dir), force=args.force)
	print(f'Exported {len(patches)} patches to {paths.PATCH_DIR}')
	for p in patches:
		print('  ' + p.name)
	return 0


def cmd_run(args: argparse.Namespace) -> int:
	return run.main(args)


def cmd_ab(args: argparse.Namespace) -> int:
	return ab.main(args)


def cmd_check_series(args: argparse.Namespace) -> int:
	return seriescheck.main(args)


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
	runs: List[ArchRun] = []
	written = export.write_reports(rdir, ktree, args.origin, runs_out=runs)
	for p in written.values():
		print(p)
	damaged = [r for r in runs if r.disagreement]
	for r in damaged:
		print(f'kunit.py report: {r.arch}: {r.disagreement}; reported as {r.status}',
		      file=sys.stderr)
	return 1 if damaged else 0


def cmd_clean(args: argparse.Namespace) -> int:
	cache = paths.cache_dir(args.cache_dir)
	targets = ([cache] if args.all else
		   [cache / 'build', cache / 'pristine' / 'build', cache / 'results'])
	for t in targets:
		if t.exists():
			print(f'Removing {t}')
			shutil.rmtree(t)
	return 0


def build_parser() -> argparse.ArgumentParser:
	parser = argparse.ArgumentParser(prog='kunit.py', description=__doc__)
	sub = parser.add_subparsers(dest='command', required=True)

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

	p = sub.add_parser('run', help='build and run the suites on each arch')
	_common(p)
	run.add_arguments(p)
	p.set_defaults(func=cmd_run)

	p = sub.add_parser('ab', help='build and run each arch from the pristine tree (A) and '
			   'with the series (B); label every case new, fixed or regressed by the '
			   'series; exit 1 only on a regression or a side that did not build or boot')
	_common(p)
	ab.add_arguments(p)
	p.set_defaults(func=cmd_ab)

	p = sub.add_parser('bench', help='plain kunit.py and our run side by side: cold, warm '
			   'and one-test-edit times, the overhead (docs/speed.md)')
	_common(p)
	bench.add_arguments(p)
	p.set_defaults(func=lambda a: bench.main(a))

	p = sub.add_parser('mutate', help='each lock site and capability check of ufs, appletalk '
			   'and autofs taken out in turn, the kernel rebuilt and the subsystem\'s suites '
			   'booted: killed, survived or did not build (docs/mutate.md)')
	_common(p)
	mutate.add_arguments(p)
	p.set_defaults(func=lambda a: mutate.main(a))

	p = sub.add_parser('fixtures', help='make (or find) the UFS fixture images, list them, write or check '
				   'the form the kernel carries')
	_common(p)
	fixturecmd.add_arguments(p)
	p.set_defaults(func=fixturecmd.cmd)

	p = sub.add_parser('check-series', help='apply, checkpatch and build each patch')
	_common(p)
	seriescheck.add_arguments(p)
	p.set_defaults(func=cmd_check_series)

	p = sub.add_parser('test', help='pytest, series checks and KUnit on the CI arches')
	_common(p)
	selftest.add_arguments(p)
	p.set_defaults(func=lambda a: selftest.main(a))

	p = sub.add_parser('deps', help='install the Debian packages the arches need')
	_common(p)
	p.add_argument('--arch', default='all')
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
	p.set_defaults(func=cmd_report)

	p = sub.add_parser('baseline', help='record per-case results of a run as '
			   'kunit/baselines/<arch>.json')
	_common(p)
	baseline.add_arguments(p, 'baseline')
	p.set_defaults(func=baseline.cmd_baseline)

	p = sub.add_parser('compare', help='regressions, fixes, new and flaky cases of a run '
			   'against the baselines; exit 1 only on a regression')
	_common(p)
	baseline.add_arguments(p, 'compare')
	p.set_defaults(func=baseline.cmd_compare)

	p = sub.add_parser('merge', help='the results directories of many jobs (run, check-series; '
			   'other machines too) as one: summary, JUnit, KCIDB and page; refuses jobs '
			   'of different trees or series')
	_common(p)
	merge.add_arguments(p)
	p.set_defaults(func=merge.cmd)

	p = sub.add_parser('ci-config', help='write the GitLab CI pipeline (.gitlab-ci.yml) from the '
			   'tool\'s arches, profiles and series (docs/ci.md)')
	_common(p)
	ciconfig.add_arguments(p)
	p.set_defaults(func=ciconfig.cmd)

	p = sub.add_parser('clean', help='remove build directories and results')
	_common(p)
	p.add_argument('--all', action='store_true', help='remove the whole cache')
	p.set_defaults(func=cmd_clean)

	for p in sub.choices.values():
		# Every verb: -v shows the traceback of an error (run, ab and
		# check-series also stream all output with it).
		if '-v' not in p._option_string_actions:
			p.add_argument('-v', '--verbose', action='store_true',
				       help='on an error, also show its traceback')
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
	try:
		return args.func(args)
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
