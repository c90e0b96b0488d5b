# SPDX-License-Identifier: GPL-2.0
"""merge: the results directories of many jobs as one, and report,
compare and baseline on it; check-series' shards and series.json.

Results directories are written as runner.main writes them (test_baseline's
write_results and ktap_console); consoles are read by a copy of the real
kunit_parser."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, Optional

import pytest

from bklkunit import cli
from bklkunit.base.errors import UserError
from bklkunit.ci import merge
from bklkunit.compare import baseline
from bklkunit.results import rundir, seriesjob, verdicts
from bklkunit.results.seriesjob import SeriesCheck, SeriesJob
from bklkunit.series import checkplan
from test_baseline import ALPHA, BETA, ktap_console, write_results
from test_report import schema, validate  # noqa: F401  (the schema fixture)

HEAD = 'c0ffee' * 6 + 'c0ff'
SERIES = 'ab' * 32
FAILING = ('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'skip')])


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch):
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})


def job(root: Path, ktree: Path, consoles: Dict[str, Optional[str]], profile: str = 'default',
	head: str = HEAD, series_hash: str = SERIES, **kw) -> Path:
	"""One CI job's results directory: `run --results-dir root`."""
	rdir = write_results(root, ktree, consoles, series_hash=series_hash, **kw)
	s = json.loads((rdir / 'summary.json').read_text())
	s.update(head=head, profile=profile, started='2026-12-07T06:00:00.000+00:00')
	for e in s['arches']:
		e['profile'] = profile
		console = consoles.get(e['arch'])
		if console is not None:     # run counts the skips too (write_results does not)
			e['skipped'] = verdicts.judge(ktree, console.splitlines(keepends=True)).skipped
		(rdir / e['arch'] / 'verdict.json').write_text(json.dumps(e, indent=1))
	(rdir / 'summary.json').write_text(json.dumps(s, indent=1))
	return rdir


def three_jobs(tmp_path: Path, ktree: Path):
	a = job(tmp_path / 'ci' / 'run-x86_64-default', ktree, {'x86_64': ktap_console(ALPHA, BETA)})
	b = job(tmp_path / 'ci' / 'run-arm-default', ktree, {'arm': ktap_console(FAILING, BETA)})
	c = job(tmp_path / 'ci' / 'run-x86_64-kasan', ktree, {'x86_64': ktap_console(ALPHA)},
		profile='kasan')
	return a, b, c


def junit_counts(path: Path) -> Dict[str, Dict[str, int]]:
	"""{arch dir: {pass, fail, skip, error}} of a junit.xml's testcases."""
	out: Dict[str, Dict[str, int]] = {}
	for ts in ET.parse(path).getroot().findall('testsuite'):
		slot = ts.get('name', '').split('.')[0]
		n = out.setdefault(slot, dict.fromkeys(('pass', 'fail', 'skip', 'error'), 0))
		for tc in ts.findall('testcase'):
			kind = ('fail' if tc.find('failure') is not None else 'error'
				if tc.find('error') is not None else 'skip'
				if tc.find('skipped') is not None else 'pass')
			n[kind] += 1
	return out


def kcidb_counts(doc) -> Dict[str, Dict[str, int]]:
	builds = {b['id']: b['misc']['arch'] + ('' if b['misc']['profile'] == 'default'
						 else '-' + b['misc']['profile'])
		  for b in doc['builds']}
	out: Dict[str, Dict[str, int]] = {}
	for t in doc['tests']:
		if t['path'] == 'kunit':
			continue
		n = out.setdefault(builds[t['build_id']], {})
		n[t['status']] = n.get(t['status'], 0) + 1
	return out


# ------------------------------------------------------------------ merge


def test_merge_jobs_of_arches_and_profiles(tmp_path, parser_tree, schema):  # noqa: F811
	three_jobs(tmp_path, parser_tree)
	out = tmp_path / 'merged'
	summary, runs, notes = merge.merge(out, [str(tmp_path / 'ci')], named_tree=str(parser_tree))
	assert [(e['arch'], e['profile'], e['dir']) for e in summary['arches']] == [
		('x86_64', 'default', 'x86_64'), ('arm', 'default', 'arm'),
		('x86_64', 'kasan', 'x86_64-kasan')]
	assert summary['profiles'] == ['default', 'kasan'] and 'profile' not in summary
	assert summary['head'] == HEAD and summary['series_hash'] == SERIES
	assert len(summary['merged_from']) == 3 and notes == []
	for d in ('x86_64', 'arm', 'x86_64-kasan'):
		assert (out / d / 'console.log').is_file() and (out / d / 'junit.xml').is_file()
	# Counts that agree: summary.json, junit.xml, kcidb.json.
	on_disk = json.loads((out / 'summary.json').read_text())
	assert on_disk == summary
	junit = junit_counts(out / 'junit.xml')
	doc = json.loads((out / 'kcidb.json').read_text())
	validate(doc, schema)
	kc = kcidb_counts(doc)
	for e in summary['arches']:
		j = junit[e['dir']]
		assert (e['passed'], e['failed'], e['skipped']) == (j['pass'], j['fail'], j['skip'])
		assert kc[e['dir']].get('PASS', 0) == e['passed']
		assert kc[e['dir']].get('FAIL', 0) == e['failed']
		assert kc[e['dir']].get('SKIP', 0) == e['skipped']
	root = ET.parse(out / 'junit.xml').getroot()
	assert int(root.get('tests')) == sum(sum(n.values()) for n in junit.values())
	# One checkout; a build per arch x profile, each with its configuration.
	assert len(doc['checkouts']) == 1 and doc['checkouts'][0]['id'] == f'bkl_kunit:{HEAD}+{SERIES[:16]}'
	assert sorted(b['config_name'] for b in doc['builds']) == ['kunit-default', 'kunit-default',
								     'kunit-kasan']
	assert len({b['id'] for b in doc['builds']}) == 3
	page = (out / 'index.html').read_text()
	assert '<th>x86_64-kasan<span class="note">little</span></th>' in page
	assert '<th>arm<span class="note">little</span></th>' in page
	# Nothing left beside it.
	assert sorted(p.name for p in tmp_path.iterdir()) == ['ci', 'merged']


def test_report_compare_and_baseline_read_a_merged_directory(tmp_path, parser_tree, capsys):
	three_jobs(tmp_path, parser_tree)
	out = tmp_path / 'merged'
	assert cli.main(['merge', str(out), str(tmp_path / 'ci'), '--tree', str(parser_tree)]) == 1
	printed = capsys.readouterr().out
	assert '  arm           FAIL     3 passed 1 failed 1 skipped 0 crashed' in printed
	assert 'merge: not a pass: arm' in printed
	bdir = tmp_path / 'baselines'
	bdir.mkdir()
	assert cli.main(['baseline', str(out), '--tree', str(parser_tree),
			 '--baseline-dir', str(bdir)]) == 0
	# The default profile's at the top, the others in <profile>/, as kunit/baselines.
	assert sorted(str(p.relative_to(bdir)) for p in bdir.rglob('*.json')) == [
		'arm.json', 'kasan/x86_64.json', 'x86_64.json']
	assert json.loads((bdir / 'kasan' / 'x86_64.json').read_text())['cases'] == {
		'alpha.one': 'pass', 'alpha.three': 'pass', 'alpha.two': 'pass'}
	capsys.readouterr()
	assert cli.main(['compare', str(out), '--tree', str(parser_tree),
			 '--baseline-dir', str(bdir)]) == 0
	text = capsys.readouterr().out
	assert 'x86_64-kasan (PASS): compared with' in text and 'compare: no regressions' in text
	# report writes the same files again.
	before = (out / 'junit.xml').read_bytes()
	assert cli.main(['report', str(out), '--tree', str(parser_tree)]) == 0
	assert (out / 'junit.xml').read_bytes() == before


def test_a_merged_kasan_regression_is_judged_by_the_kasan_baseline(tmp_path, parser_tree, capsys):
	bdir = tmp_path / 'b'
	(bdir / 'kasan').mkdir(parents=True)
	base = {'format': 1, 'arch': 'x86_64', 'cases': {'alpha.one': 'pass', 'alpha.two': 'pass'}}
	(bdir / 'kasan' / 'x86_64.json').write_text(json.dumps(base))
	(bdir / 'x86_64.json').write_text(json.dumps(base))
	job(tmp_path / 'ci' / 'a', parser_tree, {'x86_64': ktap_console(ALPHA)})
	job(tmp_path / 'ci' / 'b', parser_tree, {'x86_64': ktap_console(FAILING)}, profile='kasan')
	merge.merge(tmp_path / 'm', [str(tmp_path / 'ci')], named_tree=str(parser_tree))
	assert cli.main(['compare', str(tmp_path / 'm'), '--tree', str(parser_tree),
			 '--baseline-dir', str(bdir)]) == 1
	text = capsys.readouterr().out
	assert 'REGRESSION  alpha.two: pass -> fail' in text
	assert 'compare: x86_64-kasan 1 regression(s)' in text


@pytest.mark.parametrize('key,value', [('series_hash', 'cd' * 32), ('head', 'deadbeef' * 5),
				       ('kernel_version', '6.12.119'),
				       ('filter_glob', 'alpha*')])
def test_jobs_of_other_trees_are_refused(tmp_path, parser_tree, capsys, key, value):
	job(tmp_path / 'ci' / 'a', parser_tree, {'x86_64': ktap_console(ALPHA)})
	b = job(tmp_path / 'ci' / 'b', parser_tree, {'arm': ktap_console(ALPHA)})
	s = json.loads((b / 'summary.json').read_text())
	s[key] = value
	(b / 'summary.json').write_text(json.dumps(s))
	out = tmp_path / 'merged'
	assert cli.main(['merge', str(out), str(tmp_path / 'ci'), '--tree', str(parser_tree)]) == 2
	err = capsys.readouterr().err.strip().splitlines()
	assert len(err) == 1 and err[0].startswith('kunit.py merge: error: the jobs ran different')
	assert key in err[0] and err[0].endswith('not merged')
	assert sorted(p.name for p in tmp_path.iterdir()) == ['ci']


@pytest.mark.parametrize('damage,expect', [
	('{"arches": [', 'not JSON'),
	('[]', 'not a summary of `kunit.py run`'),
	('{"arches": [{"arch": "x86_64", "status": "PASS", "dir": "../x"}]}', '"dir" is not a directory name'),
])
def test_damaged_inputs_are_refused(tmp_path, parser_tree, capsys, damage, expect):
	job(tmp_path / 'ci' / 'a', parser_tree, {'x86_64': ktap_console(ALPHA)})
	b = job(tmp_path / 'ci' / 'b', parser_tree, {'arm': ktap_console(ALPHA)})
	(b / 'summary.json').write_text(damage)
	assert cli.main(['merge', str(tmp_path / 'm'), str(tmp_path / 'ci'),
			 '--tree', str(parser_tree)]) == 2
	err = capsys.readouterr().err.strip().splitlines()
	assert len(err) == 1 and expect in err[0] and str(b / 'summary.json') in err[0]
	assert not (tmp_path / 'm').exists()


def test_damaged_series_results_and_run_json_are_refused(tmp_path, parser_tree, capsys):
	job(tmp_path / 'ci' / 'a', parser_tree, {'x86_64': ktap_console(ALPHA)})
	(tmp_path / 'ci' / 's').mkdir()
	(tmp_path / 'ci' / 's' / 'series.json').write_text('{"kind": "series", "checks": 3}')
	assert cli.main(['merge', str(tmp_path / 'm'), str(tmp_path / 'ci'),
			 '--tree', str(parser_tree)]) == 2
	assert '"checks" is missing or not a list' in capsys.readouterr().err
	(tmp_path / 'ci' / 's' / 'series.json').unlink()
	(tmp_path / 'ci' / 's' / 'run.json').write_text('{"arches": "x86_64"}')
	assert cli.main(['merge', str(tmp_path / 'm'), str(tmp_path / 'ci'),
			 '--tree', str(parser_tree)]) == 2
	assert 'not what run writes' in capsys.readouterr().err
	assert not (tmp_path / 'm').exists()


def test_one_arch_and_profile_in_two_jobs_is_refused(tmp_path, parser_tree):
	job(tmp_path / 'ci' / 'a', parser_tree, {'x86_64': ktap_console(ALPHA)})
	job(tmp_path / 'ci' / 'b', parser_tree, {'x86_64': ktap_console(ALPHA)})
	with pytest.raises(UserError, match=r'x86_64 \(default\) is in two jobs'):
		merge.merge(tmp_path / 'm', [str(tmp_path / 'ci')], named_tree=str(parser_tree))


def test_bad_options_write_nothing(tmp_path, parser_tree, capsys):
	job(tmp_path / 'ci' / 'a', parser_tree, {'x86_64': ktap_console(ALPHA)})
	(tmp_path / 'full').mkdir()
	(tmp_path / 'full' / 'x').write_text('')
	for argv, msg in (
		(['--expect', 'sparc'], "unknown arch 'sparc'"),
		(['--expect', 'x86_64:kasn'], "unknown profile 'kasn'"),
		(['--expect-shards', '0'], 'must be at least 1'),
		(['--origin', 'Bad-Origin'], 'KCIDB origin'),
	):
		assert cli.main(['merge', str(tmp_path / 'm'), str(tmp_path / 'ci'),
				 '--tree', str(parser_tree)] + argv) == 2
		assert msg in capsys.readouterr().err
	assert cli.main(['merge', str(tmp_path / 'full'), str(tmp_path / 'ci')]) == 2
	assert 'exists and is not an empty directory' in capsys.readouterr().err
	assert cli.main(['merge', str(tmp_path / 'm'), str(tmp_path / 'nothing')]) == 2
	assert 'no such directory' in capsys.readouterr().err
	assert sorted(p.name for p in tmp_path.iterdir()) == ['ci', 'full']


def died_job(root: Path, ktree: Path) -> Path:
	"""A job killed while it booted arm: run.json, x86_64's verdict, and
	arm's build.log, kunit.log and a console cut in the middle of beta."""
	rdir = job(root, ktree, {'x86_64': ktap_console(ALPHA)})
	s = json.loads((rdir / 'summary.json').read_text())
	(rdir / 'summary.json').unlink()
	rundir.write_plan(rdir, {k: s[k] for k in ('tree', 'kernel_version', 'debian_version',
						   'series', 'series_hash', 'head')},
			  ['x86_64', 'arm'], 'default', '', '2026-12-07T06:00:00.000+00:00')
	adir = rdir / 'arm'
	adir.mkdir()
	(adir / 'build.log').write_text('$ kunit.py build\n')
	(adir / 'kunit.log').write_text('$ kunit.py exec\n')
	whole = ktap_console(ALPHA, BETA).splitlines()
	(adir / 'console.log').write_text('\n'.join(whole[:whole.index('    ok 1 p') + 1]) + '\n')
	return rdir


def test_a_job_that_died_is_a_crash_never_a_pass(tmp_path, parser_tree, schema, capsys):  # noqa: F811
	died_job(tmp_path / 'ci' / 'run-died', parser_tree)
	job(tmp_path / 'ci' / 'run-arm64', parser_tree, {'arm64': ktap_console(ALPHA)})
	out = tmp_path / 'merged'
	assert cli.main(['merge', str(out), str(tmp_path / 'ci'), '--tree', str(parser_tree),
			 '--expect', 'x86_64,arm,arm64,i386']) == 1
	printed = capsys.readouterr().out
	summary = json.loads((out / 'summary.json').read_text())
	st = {e['dir']: e for e in summary['arches']}
	assert st['x86_64']['status'] == 'PASS'           # finished before the job died
	assert st['arm']['status'] == 'ERROR' and 'the job ended before arm had a verdict' in \
		st['arm']['reason']
	assert st['i386']['status'] == 'NOT_RUN' and 'no job left any' in st['i386']['reason']
	# arm's console: alpha's three and beta.p passed; beta.q was cut off.
	assert (st['arm']['passed'], st['arm']['failed'], st['arm']['crashed']) == (4, 0, 1)
	assert 'merge: not a pass: i386, arm' in printed
	junit = junit_counts(out / 'junit.xml')
	assert junit['arm'] == {'pass': 4, 'fail': 0, 'skip': 0, 'error': 1}
	assert junit['i386'] == {'pass': 0, 'fail': 0, 'skip': 0, 'error': 1}     # i386.build
	doc = json.loads((out / 'kcidb.json').read_text())
	validate(doc, schema)
	kunit = {t['misc']['arch']: t['status'] for t in doc['tests'] if t['path'] == 'kunit'}
	assert kunit['arm'] == 'ERROR' and kunit['x86_64'] == 'PASS'
	builds = {b['misc']['arch']: b['status'] for b in doc['builds']}
	assert builds['i386'] == 'ERROR'
	page = (out / 'index.html').read_text()
	assert 'class="st-ERROR">arm ERROR' in page and 'st-NOT_RUN">i386 NOT_RUN' in page
	# compare: what the dead job did not show is missing, a regression.
	bdir = tmp_path / 'b'
	bdir.mkdir()
	(bdir / 'arm.json').write_text(json.dumps({'arch': 'arm', 'cases': {
		'alpha.one': 'pass', 'beta.p': 'pass', 'beta.q': 'pass'}}))
	(bdir / 'i386.json').write_text(json.dumps({'arch': 'i386', 'cases': {'alpha.one': 'pass'}}))
	assert cli.main(['compare', str(out), '--tree', str(parser_tree), '--baseline-dir', str(bdir)]) == 1
	text = capsys.readouterr().out
	# (the case running when it died has no name without kunit.list.log: beta.case2, crash)
	assert 'REGRESSION  beta.q: pass -> missing' in text and 'beta.case2: crash' in text
	assert 'REGRESSION  alpha.one: pass -> missing' in text


def series_job(root: Path, shard: str, patches: int, complete: bool = True,
	       failed: bool = False) -> Path:
	k, n = (int(x) for x in shard.split('/'))
	first, last = checkplan.shard_range(k, n, patches)
	s = SeriesJob(series_hash=SERIES, kernel_version='6.12.118', debian_version='6.12.118-1~deb12u1',
		      patches=patches, from_patch=first, to_patch=last, shard=shard, complete=complete,
		      checks=[SeriesCheck('apply', True, '', 12.5),
			      SeriesCheck(f'build 00{first:02d}-x.patch', not failed,
					  'fs/ufs/inode.c: warning: unused' if failed else '', 30.0)])
	seriesjob.write_series_job(root / 'series.json', s)
	return root


def test_series_shards_are_merged_with_the_runs(tmp_path, parser_tree, capsys, monkeypatch):
	monkeypatch.setattr(merge, 'series_length', lambda: 7)
	job(tmp_path / 'ci' / 'run-x86_64', parser_tree, {'x86_64': ktap_console(ALPHA)})
	series_job(tmp_path / 'ci' / 'series-1', '1/3', 7)
	series_job(tmp_path / 'ci' / 'series-2', '2/3', 7, complete=False, failed=True)
	out = tmp_path / 'm'
	assert cli.main(['merge', str(out), str(tmp_path / 'ci'), '--tree', str(parser_tree),
			 '--expect-shards', '3']) == 1
	printed = capsys.readouterr().out
	assert '  series patches 1-2  PASS     2 passed 0 failed' in printed
	assert '  series patches 3-4  CRASH (did not finish) 1 passed 1 failed' in printed
	assert '  series patches 5-7  CRASH (did not finish) 0 passed 0 failed' in printed  # no job left it
	summary = json.loads((out / 'summary.json').read_text())
	assert [(c['name'], c['complete'], c['failed']) for c in summary['series_checks']] == [
		('patches 1-2', True, 0), ('patches 3-4', False, 1), ('patches 5-7', False, 0)]
	root = ET.parse(out / 'junit.xml').getroot()
	suites = {ts.get('name'): ts for ts in root.findall('testsuite')}
	assert set(suites) >= {'series.patches_1-2', 'series.patches_3-4', 'series.patches_5-7'}
	s34 = suites['series.patches_3-4']
	assert (s34.get('tests'), s34.get('failures'), s34.get('errors')) == ('3', '1', '1')
	assert suites['series.patches_5-7'].get('errors') == '1'
	assert int(root.get('tests')) == sum(int(ts.get('tests')) for ts in suites.values())
	page = (out / 'index.html').read_text()
	assert 'Series checks' in page and 'fs/ufs/inode.c: warning: unused' in page


def test_series_of_another_series_is_refused(tmp_path, parser_tree):
	job(tmp_path / 'ci' / 'run-x86_64', parser_tree, {'x86_64': ktap_console(ALPHA)})
	d = series_job(tmp_path / 'ci' / 'series-1', '1/2', 6)
	doc = json.loads((d / 'series.json').read_text())
	doc['series_hash'] = 'ef' * 32
	(d / 'series.json').write_text(json.dumps(doc))
	with pytest.raises(UserError, match='different trees or series: series_hash'):
		merge.merge(tmp_path / 'm', [str(tmp_path / 'ci')], named_tree=str(parser_tree))


def test_a_single_run_directory_reads_as_it_always_did(tmp_path, parser_tree):
	rdir = job(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)}, profile='kasan')
	s = json.loads((rdir / 'summary.json').read_text())
	for e in s['arches']:
		del e['profile']
	(rdir / 'summary.json').write_text(json.dumps(s))
	summary, runs = rundir.load_run(rdir, parser_tree, probe=False)
	assert [(r.arch, r.name, r.profile) for r in runs] == [('x86_64', 'x86_64', 'kasan')]
	assert baseline.profile_dirs(tmp_path / 'b', summary) == {'kasan': tmp_path / 'b'}
	assert baseline.profile_dirs(None, summary) == {'kasan': baseline.default_dir('kasan')}


# --------------------------------------------------------------- shards


@pytest.mark.parametrize('patches', [1, 2, 7, 68])
@pytest.mark.parametrize('n', [1, 2, 3, 4])
def test_shards_are_contiguous_and_cover_the_series(patches, n):
	if n > patches:
		return
	ranges = [checkplan.shard_range(k, n, patches) for k in range(1, n + 1)]
	assert ranges[0][0] == 1 and ranges[-1][1] == patches
	assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))
	sizes = [b - a + 1 for a, b in ranges]
	assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


@pytest.mark.parametrize('argv,msg', [
	(['--shard', '3'], 'not K/N'),
	(['--shard', '5/4'], 'K is more than N'),
	(['--shard', '1/99'], 'fewer than 99 shards'),
	(['--shard', '1/2', '--from-patch', '3'], '--shard contradicts --from-patch'),
	(['--shard', 'a/2'], '--shard K: not a whole number'),
])
def test_bad_shards(argv, msg):
	p = cli.build_parser()
	args = p.parse_args(['check-series'] + argv)
	with pytest.raises(UserError, match=msg):
		checkplan.SeriesOptions.from_args(args, 68)


def test_a_shard_is_its_range():
	args = cli.build_parser().parse_args(['check-series', '--shard', '2/4', '--build-config=lean',
					      '--checks=apply,build'])
	o = checkplan.SeriesOptions.from_args(args, 68)
	assert (o.from_patch, o.to_patch, o.shard) == (18, 34, '2/4')
	assert [i for i in range(68) if o.takes(i)] == list(range(17, 34))


def test_jobs_of_another_machine_are_read_with_this_machines_tree(tmp_path, parser_tree,
								  monkeypatch, capsys):
	for name, arch in (('a', 'x86_64'), ('b', 'arm')):
		d = job(tmp_path / 'ci' / name, parser_tree, {arch: ktap_console(ALPHA)})
		s = json.loads((d / 'summary.json').read_text())
		s['tree'] = '/elsewhere/src/linux'
		(d / 'summary.json').write_text(json.dumps(s))
	monkeypatch.setattr(merge.tree, 'find_prepared', lambda cache: parser_tree)
	assert cli.main(['merge', str(tmp_path / 'm'), str(tmp_path / 'ci')]) == 0
	summary = json.loads((tmp_path / 'm' / 'summary.json').read_text())
	assert summary['tree'] == str(parser_tree.resolve())
	monkeypatch.setattr(merge.tree, 'find_prepared',
			    lambda cache: (_ for _ in ()).throw(UserError('no prepared work tree')))
	assert cli.main(['merge', str(tmp_path / 'm2'), str(tmp_path / 'ci')]) == 2
	err = capsys.readouterr().err
	assert '/elsewhere/src/linux has no tools/testing/kunit/kunit_parser.py' in err
	assert not (tmp_path / 'm2').exists()


def test_an_earlier_merge_beside_the_jobs_is_passed_over(tmp_path, parser_tree, capsys):
	three_jobs(tmp_path, parser_tree)
	merge.merge(tmp_path / 'ci' / 'merged', [str(tmp_path / 'ci')], named_tree=str(parser_tree))
	summary, _, notes = merge.merge(tmp_path / 'again', [str(tmp_path / 'ci')],
					named_tree=str(parser_tree))
	assert len(summary['merged_from']) == 3
	assert notes == [f'{tmp_path / "ci" / "merged"}: the output of an earlier merge, passed over']
	# Named on its own, a merged directory is a job: merged again, the same arches.
	again, _, _ = merge.merge(tmp_path / 'twice', [str(tmp_path / 'again')],
				  named_tree=str(parser_tree))
	assert [e['dir'] for e in again['arches']] == [e['dir'] for e in summary['arches']]
	assert [e['passed'] for e in again['arches']] == [e['passed'] for e in summary['arches']]


def test_a_merged_directory_merged_again_keeps_its_series_checks(tmp_path, parser_tree):
	job(tmp_path / 'ci' / 'run-x86_64', parser_tree, {'x86_64': ktap_console(ALPHA)})
	series_job(tmp_path / 'ci' / 'series-1', '1/2', 6)
	series_job(tmp_path / 'ci' / 'series-2', '2/2', 6, failed=True)
	merge.merge(tmp_path / 'm', [str(tmp_path / 'ci')], named_tree=str(parser_tree))
	job(tmp_path / 'more' / 'run-arm', parser_tree, {'arm': ktap_console(ALPHA)})
	again, _, _ = merge.merge(tmp_path / 'm2', [str(tmp_path / 'm'), str(tmp_path / 'more')],
				  named_tree=str(parser_tree))
	assert [e['dir'] for e in again['arches']] == ['x86_64', 'arm']
	assert [(c['name'], c['failed']) for c in again['series_checks']] == [('patches 1-3', 0),
									     ('patches 4-6', 1)]
