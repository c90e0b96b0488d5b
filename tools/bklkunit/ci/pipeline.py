# SPDX-License-Identifier: GPL-2.0
"""`kunit.py ci-config`: the GitLab CI pipeline, made from the tool's own
lists (paths.QEMU_ARCHES, profiles.PROFILES and where each can run, the
series' length), so that it cannot drift from them.  The committed
.gitlab-ci.yml is its output with the defaults (tools/tests/test_ciconfig.py
checks that); a smaller pipeline (a local gitlab-ci-local run, docs/ci.md)
is the same generator with options, never an edited file.

  prepare     deps and prepare: the tree in $BKL_KUNIT_CACHE
  test        pytest; run, one job per arch x profile (parallel:matrix),
              each with its ccache (a GitLab cache per arch x profile);
              check-series, the per-patch checks in --shards contiguous
              ranges (--shard K/N) and the head checks; ab per arch
  merge       merge every job's results (docs/results.md#merged-results)
              into one page, JUnit and KCIDB file; compare with
              kunit/baselines: a regression fails the pipeline

Every job keeps what it wrote, also when it fails or dies (artifacts
when: always): ci-results/<job>/, which merge reads.
"""

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..base import atomic, paths
from ..base.errors import UserError
from ..run import profiles
from ..series import checkplan
from ..source import tree

FILE = paths.REPO / '.gitlab-ci.yml'
PY = '/usr/bin/python3'
KUNIT = f'{PY} tools/kunit.py'
RESULTS = 'ci-results'
DEFAULT_SHARDS = 4
DEFAULT_AB_ARCHES = ('x86_64',)
# The per-patch checks of a shard (lean builds, as `make test`), and the
# checks of the series head (what `make test` leaves out among them).
SHARD_CHECKS = 'apply,checkpatch,fixes,maintainers,build'
HEAD_CHECKS = 'apply,bkl-scan,go7007,modules,mail'
# How long artifacts are kept: a job's own results a week (merge has
# copied them), the merged page a month.
JOB_EXPIRY = '1 week'
MERGED_EXPIRY = '30 days'


@dataclass(frozen=True)
class Pipeline:
	"""What the pipeline runs: ci-config's options, checked."""
	arches: Tuple[str, ...] = tuple(paths.QEMU_ARCHES)
	profiles: Tuple[str, ...] = tuple(profiles.PROFILES)
	shards: int = DEFAULT_SHARDS
	ab_arches: Tuple[str, ...] = DEFAULT_AB_ARCHES
	head_checks: bool = True
	pytest: bool = True

	def matrix(self) -> List[Tuple[str, List[str]]]:
		"""(profile, the arches it runs on): every arch x profile but those
		the profile does not exist on (profiles.Profile.unsupported)."""
		out = []
		for name in self.profiles:
			p = profiles.PROFILES[name]
			arches = [a for a in self.arches if p.supports(a)]
			if arches:
				out.append((name, arches))
		return out

	def expect(self) -> str:
		"""merge --expect: every arch x profile of the matrix."""
		return ','.join(a if p == profiles.DEFAULT else f'{a}:{p}'
				for p, arches in self.matrix() for a in arches)

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'Pipeline':
		"""ci-config's options, read once; a UserError (one line) for a bad one."""
		names = [p.strip() for p in args.profiles.split(',') if p.strip()]
		bad = [p for p in names if p not in profiles.PROFILES]
		if bad or not names:
			raise UserError(f'--profiles: unknown profile(s) {", ".join(bad) or "(none given)"}; '
					f'choose from {", ".join(profiles.PROFILES)}')
		shards = checkplan.whole(args.shards, '--shards', 1)
		patches = len(tree.read_series(paths.PATCH_DIR))
		if shards > patches:
			raise UserError(f'--shards {shards}: the series has {patches} patches')
		return cls(_arch_list(args.arches, '--arches'), tuple(dict.fromkeys(names)), shards,
			   _arch_list(args.ab_arches, '--ab-arches', allow_empty=True),
			   not args.no_head_checks, not args.no_pytest)

	def jobs(self) -> List[str]:
		"""Every job's name as GitLab shows it (a matrix job: 'run: [x86_64, default]')."""
		out = ['prepare'] + (['pytest'] if self.pytest else [])
		out += [f'run: [{p}, {a}]' for p, arches in self.matrix() for a in arches]
		out += [f'series: [{k}]' for k in range(1, self.shards + 1)]
		out += ['series-head'] if self.head_checks else []
		out += [f'ab: [{a}]' for a in self.ab_arches]
		return out + ['merge']


def add_arguments(p: argparse.ArgumentParser) -> None:
	p.add_argument('--arches', default=','.join(paths.QEMU_ARCHES), metavar='A[,B]',
		       help=f'arches of the run jobs (default: {",".join(paths.QEMU_ARCHES)})')
	p.add_argument('--profiles', default=','.join(profiles.PROFILES), metavar='P[,Q]',
		       help=f'profiles of the run jobs (default: {",".join(profiles.PROFILES)}); an arch '
			    'a profile does not exist on gets no job')
	p.add_argument('--shards', default=str(DEFAULT_SHARDS), metavar='N',
		       help=f'the per-patch checks in N jobs of contiguous ranges (default {DEFAULT_SHARDS})')
	p.add_argument('--ab-arches', default=','.join(DEFAULT_AB_ARCHES), metavar='A[,B]',
		       help='arches of the ab jobs, \'\' for none (default: x86_64)')
	p.add_argument('--no-head-checks', action='store_true',
		       help='leave out the job of the head checks (bkl-scan, go7007, modules, mail)')
	p.add_argument('--no-pytest', action='store_true', help='leave out the pytest job')
	p.add_argument('-o', '--output', default=None, metavar='FILE',
		       help='write the pipeline to FILE (default: stdout)')
	p.add_argument('--check', action='store_true',
		       help=f'instead: exit 1 when {FILE.name} is not what these options make')


def _arch_list(spec: str, option: str, allow_empty: bool = False) -> Tuple[str, ...]:
	if allow_empty and not spec.strip():
		return ()
	try:
		arches = paths.parse_arches(spec)
	except ValueError as e:
		raise UserError(f'{option}: {e}')
	bad = [a for a in arches if a not in paths.QEMU_ARCHES]
	if bad:
		raise UserError(f'{option}: {", ".join(bad)} has no QEMU job; choose from '
				f'{", ".join(paths.QEMU_ARCHES)}')
	return tuple(arches)


# ------------------------------------------------------------------ YAML

# Characters a plain (unquoted) YAML scalar may not start with.
_INDICATORS = set('-?:,[]{}#&*!|>\'"%@`')
_RESERVED = ('true', 'false', 'yes', 'no', 'on', 'off', 'null', '~', 'y', 'n')


def _scalar(v: Any, flow: bool = False) -> str:
	"""A YAML scalar: plain when YAML reads it back as this same string
	(tools/tests/test_ciconfig.py loads the file), else JSON's
	double-quoted form, which is valid YAML.  flow: inside [a, b]."""
	if isinstance(v, bool):
		return 'true' if v else 'false'
	if isinstance(v, int):
		return str(v)
	s = str(v)
	plain = (s and s[0] not in _INDICATORS and s == s.strip() and '\n' not in s
		 and ': ' not in s and ' #' not in s and not s.endswith(':')
		 and s.lower() not in _RESERVED and not re.fullmatch(r'[-+.0-9][-+_.:0-9eE]*', s)
		 and s.isprintable() and not (flow and set(s) & set(',[]{}')))
	return s if plain else json.dumps(s)


def _yaml(v: Any, indent: int = 0) -> List[str]:
	"""Block YAML of dicts (in their order), lists and scalars; a list of
	scalars short enough stays on one line ([a, b])."""
	pad = '  ' * indent
	out: List[str] = []
	if isinstance(v, dict):
		for k, x in v.items():
			if isinstance(x, (dict, list)) and x:
				flow = _flow(x)
				if flow and len(pad) + len(k) + len(flow) < 96:
					out.append(f'{pad}{k}: {flow}')
				else:
					out.append(f'{pad}{k}:')
					out += _yaml(x, indent + (1 if isinstance(x, dict) else 0))
			else:
				out.append(f'{pad}{k}: {_scalar(x) if not isinstance(x, (dict, list)) else "{}" if isinstance(x, dict) else "[]"}')
	elif isinstance(v, list):
		for x in v:
			if isinstance(x, dict):
				inner = _yaml(x, indent + 1)
				out.append(f'{pad}- {inner[0].lstrip()}')
				out += inner[1:]
			else:
				out.append(f'{pad}- {_scalar(x)}')
	return out


def _flow(v: Any) -> str:
	"""[a, b] for a list of scalars; '' otherwise."""
	if isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v):
		return '[' + ', '.join(_scalar(x, flow=True) for x in v) + ']'
	return ''


def _artifacts(expire: str, path: str, junit: str = '') -> Dict[str, Any]:
	a: Dict[str, Any] = {'when': 'always', 'expire_in': expire, 'paths': [path]}
	if junit:
		a['reports'] = {'junit': junit}
	return a


def _test_job(cache_key: str, script: List[str], head: Optional[Dict[str, Any]] = None,
	      timeout: str = '', fail_on_1: bool = False) -> Dict[str, Any]:
	"""A job of the test stage after prepare, with its own ccache and every
	result kept: head (variables, parallel) after `needs`.  Unless
	fail_on_1, exit 1 (a case or check that is not a pass) is allowed here:
	merge and compare judge it; a setup error (2) fails the job."""
	job: Dict[str, Any] = {'stage': 'test', 'needs': ['prepare']}
	job.update(head or {})
	job['cache'] = {'key': cache_key, 'paths': ['.ccache/'], 'when': 'always'}
	if timeout:
		job['timeout'] = timeout
	job['script'] = script
	if not fail_on_1:
		job['allow_failure'] = {'exit_codes': [1]}
	job['artifacts'] = _artifacts(JOB_EXPIRY, f'{RESULTS}/')
	return job


def document(pl: Pipeline) -> Dict[str, Any]:
	"""The pipeline as the dict .gitlab-ci.yml is written from."""
	series_vars = {'SHARDS': str(pl.shards)}
	doc: Dict[str, Any] = {
		'stages': ['prepare', 'test', 'merge'],
		'variables': {
			# merge: every arch x profile and shard the pipeline runs; one
			# a job did not leave is NOT_RUN (never a pass).
			'BKL_CI_EXPECT': pl.expect(),
			'BKL_CI_SHARDS': str(pl.shards),
		},
		'default': {
			'interruptible': True,
			'before_script': [
				# The tool's cache (the tree, the build directories):
				# outside the checkout, so a shell runner keeps it between
				# jobs; a job on a fresh machine prepares its own.
				'export BKL_KUNIT_CACHE="${BKL_KUNIT_CACHE:-$HOME/.cache/bkl-kunit-ci}"',
				# The job's compiler cache, which its GitLab cache keeps.
				'export BKL_KUNIT_CCACHE_DIR="${BKL_KUNIT_CCACHE_DIR:-$CI_PROJECT_DIR/.ccache}"',
			],
		},
		'prepare': {
			'stage': 'prepare',
			'script': [f'{KUNIT} deps --arch=all --with-test', f'{KUNIT} prepare'],
		},
	}
	if pl.pytest:
		doc['pytest'] = {
			'stage': 'test', 'needs': ['prepare'],
			'script': [f'{PY} -m pytest -q -p no:cacheprovider tools/tests '
				   f'--junitxml={RESULTS}/pytest/junit.xml'],
			'artifacts': _artifacts(JOB_EXPIRY, f'{RESULTS}/pytest/',
						f'{RESULTS}/pytest/junit.xml'),
		}
	doc['run'] = _test_job(
		'ccache-$ARCH-$PROFILE',
		[f'{KUNIT} run --arch=$ARCH --profile=$PROFILE '
		 f'--results-dir={RESULTS}/run-$ARCH-$PROFILE --progress-interval=60'],
		{'parallel': {'matrix': [{'PROFILE': p, 'ARCH': arches} for p, arches in pl.matrix()]}},
		timeout='2h')
	doc['series'] = _test_job(
		'ccache-series-x86_64-$SHARD',
		[f'{KUNIT} check-series --build-config=lean --checks={SHARD_CHECKS} '
		 f'--shard=$SHARD/$SHARDS --results-dir={RESULTS}/series-$SHARD'],
		{'variables': series_vars,
		 'parallel': {'matrix': [{'SHARD': [str(k) for k in range(1, pl.shards + 1)]}]}})
	if pl.head_checks:
		doc['series-head'] = _test_job(
			'ccache-series-head',
			[f'{KUNIT} check-series --checks={HEAD_CHECKS} --go7007-arch=all '
			 f'--results-dir={RESULTS}/series-head'])
	if pl.ab_arches:
		# What the series did: fails (exit 1) on a case it regressed.
		doc['ab'] = _test_job(
			'ccache-ab-$ARCH',
			[f'{KUNIT} ab --arch=$ARCH --results-dir={RESULTS}/ab-$ARCH '
			 '--progress-interval=60'],
			{'parallel': {'matrix': [{'ARCH': list(pl.ab_arches)}]}},
			timeout='2h', fail_on_1=True)
	doc['merge'] = {
		'stage': 'merge', 'when': 'always',
		'script': [
			# The tree whose kunit_parser reads the consoles (a no-op where
			# the prepare job left it; merge takes it when the jobs' trees
			# are not on this machine).
			f'{KUNIT} prepare',
			# Exit 1 (an arch or check not a pass) is compare's to judge;
			# 2 (jobs of other trees, damaged results) fails here.
			f'{KUNIT} merge {RESULTS}/merged {RESULTS} --expect="$BKL_CI_EXPECT" '
			'--expect-shards="$BKL_CI_SHARDS" || [ $? -eq 1 ]',
			f'{KUNIT} compare {RESULTS}/merged',
		],
		'artifacts': _artifacts(MERGED_EXPIRY, f'{RESULTS}/merged/',
					f'{RESULTS}/merged/junit.xml'),
	}
	return doc


HEADER = '''# GitLab CI for bkl-kunit: generated by `./tools/kunit.py ci-config{options}`
# from the tool's own lists (arches, profiles, the series); do not edit it,
# change the generator (tools/bklkunit/ci/pipeline.py) and run it again.
# docs/ci.md: what each job does and costs, a local run with gitlab-ci-local.
'''


def render(pl: Pipeline, options: Sequence[str] = ()) -> str:
	opts = ''.join(f' {o}' for o in options)
	return HEADER.format(options=opts) + '\n'.join(
		line for key, value in document(pl).items()
		for line in [''] + _yaml({key: value})) + '\n'


def options_of(pl: Pipeline) -> List[str]:
	"""The options given, as the header names them (none: the committed file)."""
	full = Pipeline()
	out = []
	if pl.arches != full.arches:
		out.append(f'--arches={",".join(pl.arches)}')
	if pl.profiles != full.profiles:
		out.append(f'--profiles={",".join(pl.profiles)}')
	if pl.shards != full.shards:
		out.append(f'--shards={pl.shards}')
	if pl.ab_arches != full.ab_arches:
		out.append(f'--ab-arches={",".join(pl.ab_arches)}')
	if not pl.head_checks:
		out.append('--no-head-checks')
	if not pl.pytest:
		out.append('--no-pytest')
	return out


def cmd(pl: Pipeline, check: bool = False, output: Optional[str] = None) -> int:
	"""`ci-config` (cli.py reads its command line: Pipeline.from_args, --check, -o)."""
	text = render(pl, options_of(pl))
	if check:
		try:
			have = FILE.read_text()
		except OSError:
			have = ''
		if have != text:
			print(f'{FILE} is not what `./tools/kunit.py ci-config` makes: run '
			      f'`./tools/kunit.py ci-config -o {FILE.name}`')
			return 1
		print(f'{FILE}: up to date ({len(pl.jobs())} jobs)')
		return 0
	if output:
		atomic.write_text(Path(output), text)
		print(f'{output}: {len(pl.jobs())} jobs: {", ".join(pl.jobs())}')
	else:
		print(text, end='')
	return 0
