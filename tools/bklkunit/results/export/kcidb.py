# SPDX-License-Identifier: GPL-2.0
"""KCIDB v5.3 JSON: <rdir>/kcidb.json, one checkout, one build per arch,
one test per case.

Times: the checkout's start_time is the run's start (summary.json
"started"), a build's the start of its `kunit.py build`, the "kunit" test's
the start of the first `kunit.py exec`, a case's that boot's start plus the
printk time its duration counts from (rundir.place_in_time); durations are
the build's and boots' seconds and each case's printk span.  Each is left
out when the results do not have it (older results, a console without
printk times)."""

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, cast

from ..model import (
	ARCH_TO_KCIDB, ArchResult, ArchStatus, ERROR, FAIL, MISS, NOT_BUILT, PASS, parse_time,
	rfc3339)
from ..rundir import LOG_EXCERPT_MAX
from ...base import paths
from ...base.errors import UserError
from ...source import tree

DEFAULT_ORIGIN = 'bkl_kunit'
TREE_NAME = 'debian-linux-source-6.12'
CONFIG_NAME = 'kunit-default'        # KCIDB config_name: kunit-<profile>
KCIDB_VERSION = {'major': 5, 'minor': 3}
PATH_BAD = re.compile(r'[^a-zA-Z0-9_-]')


def path_part(s: str) -> str:
	"""One part of a KCIDB test path: [a-zA-Z0-9_-]+."""
	return PATH_BAD.sub('_', s) or '_'


def _clean(obj: Any) -> Any:
	"""No nulls, no NULs: what KCIDB refuses."""
	if isinstance(obj, dict):
		out = {k: _clean(v) for k, v in obj.items() if v is not None}
		return {k: v for k, v in out.items() if v != {}}
	if isinstance(obj, list):
		return [_clean(v) for v in obj if v is not None]
	if isinstance(obj, str):
		return obj.replace('\0', '')
	if isinstance(obj, Path):
		return str(obj)
	return obj


def _excerpt(lines: Sequence[str], tail: bool = False) -> Optional[str]:
	text = '\n'.join(lines).strip('\n')
	if not text:
		return None
	if len(text) > LOG_EXCERPT_MAX:
		text = text[-LOG_EXCERPT_MAX:] if tail else text[:LOG_EXCERPT_MAX]
	return text


def kcidb_patchset_hash(patches: Sequence[Path]) -> str:
	"""KCIDB's patchset_hash: sha256 over each patch's newline-terminated sha256
	(`sha256sum *.patch | cut -c-64 | sha256sum`)."""
	h = hashlib.sha256()
	for p in patches:
		h.update((hashlib.sha256(p.read_bytes()).hexdigest() + '\n').encode())
	return h.hexdigest()


def _patches(summary: Dict[str, Any], patch_dir: Path) -> Optional[List[Path]]:
	"""kernel-patches/, if it is still the series the run applied."""
	try:
		patches = tree.read_series(patch_dir)
	except (UserError, OSError):
		return None
	if not patches or tree.series_hash(patches) != summary.get('series_hash'):
		return None
	return patches


def _run_id(rdir: Path, summary_text: str) -> str:
	name = re.sub(r'[^A-Za-z0-9_.-]', '_', Path(rdir).resolve().name)
	return f'{name}-{hashlib.sha256(summary_text.encode()).hexdigest()[:12]}'


def checkout_key(summary: Dict[str, Any]) -> str:
	"""What names the checkout: the tree's HEAD and the series hash, the
	same for every run of that tree ('' when the run did not record a HEAD).
	Builds and tests are the run's own."""
	head = str(summary.get('head') or '')
	if not re.fullmatch(r'[0-9a-f]{7,64}', head):
		return ''
	series = str(summary.get('series_hash') or '')
	return head + (f'+{series[:16]}' if re.fullmatch(r'[0-9a-f]{16,}', series) else '')


def _when(t: Optional[datetime]) -> Optional[str]:
	"""A start_time: RFC 3339 in UTC, or None (left out) when not known."""
	return rfc3339(t) if t is not None else None


def check_origin(origin: str) -> None:
	if not re.fullmatch(r'[a-z0-9_]+', origin):
		raise UserError(f'KCIDB origin {origin!r}: use lower-case letters, digits and _')


def kcidb_coverage(cov: Dict[str, Any], slot: str) -> Optional[Dict[str, Any]]:
	"""A build's misc.coverage (run --coverage): the suites' totals and per
	subsystem, hit/total/percent of lines, functions and branches; or why
	there are none."""
	if not cov:
		return None
	if cov.get('error'):
		return {'error': cov['error']}
	return {'total': cov.get('total'), 'subsystems': cov.get('subsystems'),
		'html': f'{slot}/{cov["html"]}' if cov.get('html') else None}


def kcidb_document(rdir: Path, summary: Dict[str, Any], runs: List[ArchResult],
		   origin: str = DEFAULT_ORIGIN, patch_dir: Path = paths.PATCH_DIR) -> Dict[str, Any]:
	check_origin(origin)
	# (Without "format": the ids of a run do not change with the version
	# of summary.json that records it.)
	run_id = _run_id(rdir, json.dumps({k: v for k, v in summary.items() if k != 'format'},
					  sort_keys=True))
	checkout_id = f'{origin}:{checkout_key(summary) or run_id}'
	series = str(summary.get('series', '') or '')
	patches = _patches(summary, patch_dir) if series == 'applied' else None
	debver = summary.get('debian_version')
	checkout = {
		'id': checkout_id,
		'origin': origin,
		'tree_name': TREE_NAME if debver else None,
		'patchset_hash': kcidb_patchset_hash(patches) if patches else None,
		'comment': (f'Debian linux-source-6.12 {debver}' if debver else
			    f'Linux {summary.get("kernel_version") or "?"} from {summary.get("tree")}')
			   + f', series {series or "unknown"}',
		'valid': (series not in ('not applied', 'partly applied')) and any(r.built for r in runs),
		# When the run started (summary.json "started").
		'start_time': _when(parse_time(summary.get('started'))),
		'misc': {
			'debian_version': debver,
			'kernel_version': summary.get('kernel_version'),
			'series': series or None,
			'series_hash': summary.get('series_hash'),
			'patches': [p.name for p in patches] if patches else None,
			'head': summary.get('head'),
			'filter_glob': summary.get('filter_glob') or None,
			'profile': summary.get('profile'),
			'profiles': sorted({r.profile for r in runs}) or None,
		},
	}
	builds, tests = [], []
	for r in runs:
		if r.status == ArchStatus.SKIPPED_PROFILE:
			continue      # nothing was built: the profile does not exist there
		# Each arch x profile is a build (a merged results directory has
		# several profiles; the build id names its subdirectory).
		config_name = CONFIG_NAME if r.profile == 'default' else f'kunit-{r.profile}'
		build_id = f'{origin}:{run_id}:{r.name}'
		if r.built:
			bstatus = PASS
		elif r.status in NOT_BUILT:
			bstatus = FAIL
		else:
			bstatus = ERROR     # the runner failed before or while building
		builds.append({
			'id': build_id, 'origin': origin, 'checkout_id': checkout_id,
			'architecture': re.sub(r'[^a-z0-9_]', '_', r.arch.lower()),
			'compiler': r.compiler or None,
			'config_name': config_name,
			'start_time': _when(r.build_start),
			'duration': r.build_seconds,
			'command': r.build_command or None,
			'status': bstatus,
			'log_excerpt': _excerpt(r.build_tail.splitlines(), tail=True)
			if bstatus != PASS else None,
			'comment': f'{r.name}: {r.status}',
			'misc': {'arch': r.arch, 'profile': r.profile, 'arch_status': r.status,
				 'reason': r.reason or None, 'run_seconds': r.run_seconds,
				 'coverage': kcidb_coverage(r.coverage, r.name)},
		})
		if not r.built:
			continue
		env = {'comment': r.qemu or None, 'misc': {'arch': r.arch, 'qemu': r.qemu or None}}
		seen: Dict[str, int] = {}

		def add(path: str, status: str, build_id: str = build_id, env: Dict[str, Any] = env,
			seen: Dict[str, int] = seen, **kw: Any) -> None:
			# Two parameters may sanitise to one path: ids stay unique.
			n = seen[path] = seen.get(path, 0) + 1
			tests.append(dict({'id': f'{build_id}:{path}' + (f'#{n}' if n > 1 else ''),
					   'build_id': build_id, 'origin': origin, 'path': path,
					   'status': status, 'environment': env}, **kw))

		add('kunit', ARCH_TO_KCIDB.get(r.status, MISS), start_time=_when(r.boot_start),
		    duration=r.run_seconds,
		    comment=f'the whole KUnit run on {r.arch}: {r.status}',
		    log_excerpt=_excerpt(r.reason.splitlines()),
		    misc={'arch': r.arch, 'arch_status': r.status})
		for c in r.cases:
			parts = ['kunit', c.suite] + ([c.name] if c.name else []) + list(c.params)
			add('.'.join(path_part(p) for p in parts), c.status,
			    start_time=_when(c.start_time), duration=c.duration,
			    comment=f'{c.row}: {c.message}' if c.message else c.row,
			    log_excerpt=_excerpt(c.diagnostics, tail=c.status == ERROR)
			    if c.status in (FAIL, ERROR) else None,
			    misc={'arch': r.arch, 'suite': c.suite, 'case': c.name or None,
				  'params': list(c.params) or None, 'message': c.message or None,
				  'name_known': c.named})
	doc = {'version': KCIDB_VERSION, 'checkouts': [checkout], 'builds': builds, 'tests': tests}
	return cast(Dict[str, Any], _clean(doc))
