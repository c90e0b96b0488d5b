# SPDX-License-Identifier: GPL-2.0
"""baseline, compare, cross-arch divergence, flaky re-runs and crash re-runs.

Results directories are either written here directly (consoles made by
ktap_console) or made by runner.main over a fake kernel tree whose kunit.py is
a stub that knows --list_tests and answers per filter glob.  Consoles are
read by a copy of the real kunit_parser, as in test_run.py."""

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, Optional

import pytest

from bklkunit import cli
from bklkunit.base import paths
from bklkunit.compare import baseline
from bklkunit.results import kunit_tool, model, rundir, verdicts
from bklkunit.results.cases import parse_console
from bklkunit.run import laterboots, plan, runner
from conftest import STUB_ARGS, STUB_HANG, DEBVER, all_ended, deadline_after
from test_run import fake, main_env  # noqa: F401  (fixtures used by rf)

GCC = 'gcc (Debian 12.2.0-14+deb12u1) 12.2.0'
QEMU = 'QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)'


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch):
	"""Never ask this host's gcc or QEMU for their versions."""
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})


def ktap_console(*suites, compiler: str = GCC, total: Optional[int] = None) -> str:
	"""A guest console: suites are (name, [(case, result)]) with result 'ok',
	'not ok', 'skip', or None where the guest panics (the console ends
	there; the cases after it only count in the plan)."""
	lines = [f'[    0.000000] Linux version 6.12.118 (bkl-kunit@kunit) ({compiler}, '
		 'GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC',
		 'KTAP version 1', f'1..{total or len(suites)}']
	for n, (name, cases) in enumerate(suites, 1):
		lines += ['    KTAP version 1', f'    # Subtest: {name}', f'    1..{len(cases)}']
		failed = False
		for k, (case, res) in enumerate(cases, 1):
			if res is None:
				lines += [f'    # {case}: starting',
					  'BUG: kernel NULL pointer dereference, address: 0000000000000008',
					  'Kernel panic - not syncing: Fatal exception']
				return '\n'.join(lines) + '\n'
			if res == 'skip':
				lines.append(f'    ok {k} {case} # SKIP not on this arch')
			else:
				lines.append(f'    {res} {k} {case}')
				failed = failed or res == 'not ok'
		lines.append(f'{"not ok" if failed else "ok"} {n} {name}')
	lines.append('reboot: System halted')
	return '\n'.join(lines) + '\n'


ALPHA = ('alpha', [('one', 'ok'), ('two', 'ok'), ('three', 'ok')])
BETA = ('beta', [('p', 'ok'), ('q', 'ok')])


def write_results(root: Path, ktree: Path, consoles: Dict[str, Optional[str]],
		  debver: str = DEBVER, series_hash: str = 'series-1', qemu: str = QEMU,
		  config_hash: str = 'cfg-1', filter_glob: str = '',
		  extra: Optional[Dict[str, Dict]] = None) -> Path:
	"""A results directory as runner.main writes it; None is a build failure."""
	entries = []
	for arch, console in consoles.items():
		adir = root / arch
		adir.mkdir(parents=True)
		(adir / 'build.log').write_text('$ kunit.py build\n')
		e = {'arch': arch, 'reason': '', 'passed': 0, 'failed': 0, 'skipped': 0,
		     'crashed': 0, 'build_seconds': 1.0, 'run_seconds': 1.0, 'failures': []}
		if console is None:
			e.update(status='BUILD_FAILED', reason='kunit.py build exited 1')
		else:
			(adir / 'console.log').write_text(console)
			(adir / 'kunit.log').write_text('$ kunit.py exec\n')
			v = verdicts.judge(ktree, console.splitlines(keepends=True))
			e.update(status=v.status, reason=v.reason, passed=v.passed, failed=v.failed,
				 failures=v.failures, qemu=qemu, config_hash=config_hash)
		e.update((extra or {}).get(arch, {}))
		(adir / 'verdict.json').write_text(json.dumps(e, indent=1) + '\n')
		entries.append(e)
	summary = {'tree': str(ktree), 'kernel_version': '6.12.118', 'debian_version': debver,
		   'series': 'applied', 'series_hash': series_hash, 'arches': entries,
		   'results_dir': str(root), 'filter_glob': filter_glob}
	root.mkdir(parents=True, exist_ok=True)
	(root / 'summary.json').write_text(json.dumps(summary, indent=1) + '\n')
	return root


# ---------------------------------------------------------------- baseline


def test_baseline_records_every_status_and_the_environment(tmp_path, parser_tree):
	console = ktap_console(('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'skip')]),
			       ('beta', [('p', 'ok'), ('q', None), ('r', 'ok')]))
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': console})
	written, skipped = baseline.write_baselines(rdir, parser_tree, tmp_path / 'b')
	assert written == [tmp_path / 'b' / 'x86_64.json'] and skipped == []
	doc = json.loads(written[0].read_text())
	assert doc['cases'] == {'alpha.one': 'pass', 'alpha.two': 'fail', 'alpha.three': 'skip',
				'beta.p': 'pass', 'beta.q': 'crash'}
	assert doc['arch'] == 'x86_64' and doc['status'] == 'CRASH' and doc['format'] == 1
	assert doc['environment'] == {'kernel': DEBVER, 'compiler': GCC, 'qemu': QEMU,
				      'config_hash': 'cfg-1', 'series_hash': 'series-1'}


def test_baseline_missing_cases_and_parameters(tmp_path, parser_tree):
	lines = ['KTAP version 1', '1..2',
		 '    KTAP version 1', '    # Subtest: alpha', '    1..2',
		 '        KTAP version 1', '        # Subtest: sizes', '        1..2',
		 '        ok 1 small', '        not ok 2 big',
		 '    not ok 1 sizes', '    ok 2 two', 'not ok 1 alpha']
	rdir = write_results(tmp_path / 'r', parser_tree, {'arm': '\n'.join(lines) + '\n'})
	[p], _ = baseline.write_baselines(rdir, parser_tree, tmp_path / 'b')
	cases = json.loads(p.read_text())['cases']
	assert cases == {'alpha.sizes/small': 'pass', 'alpha.sizes/big': 'fail', 'alpha.two': 'pass'}


def test_baseline_json_is_deterministic_and_sorted(tmp_path, parser_tree):
	console = ktap_console(BETA, ALPHA)          # beta first on the console
	rdir = write_results(tmp_path / 'r', parser_tree, {'arm64': console})
	[p], _ = baseline.write_baselines(rdir, parser_tree, tmp_path / 'b')
	first = p.read_bytes()
	baseline.write_baselines(rdir, parser_tree, tmp_path / 'b')
	assert p.read_bytes() == first
	text = first.decode()
	assert text.endswith('}\n') and '\t' not in text
	doc = json.loads(text)
	assert list(doc) == sorted(doc)
	assert list(doc['cases']) == sorted(doc['cases'])
	assert text == json.dumps(doc, indent=1, sort_keys=True) + '\n'


def test_baseline_leaves_out_an_arch_without_cases(tmp_path, parser_tree):
	rdir = write_results(tmp_path / 'r', parser_tree,
			     {'x86_64': ktap_console(ALPHA), 'arm': None})
	written, skipped = baseline.write_baselines(rdir, parser_tree, tmp_path / 'b')
	assert [p.name for p in written] == ['x86_64.json']
	assert skipped == ['arm: no case results (BUILD_FAILED); baseline not recorded']
	written, skipped = baseline.write_baselines(rdir, parser_tree, tmp_path / 'c',
						    arches=['i386'])
	assert written == [] and skipped[0].startswith('i386: not in this run')


def test_cli_baseline_default_dir_and_latest(tmp_path, parser_tree, monkeypatch, capsys):
	kunit_dir = tmp_path / 'repo' / 'kunit'
	monkeypatch.setattr(paths, 'KUNIT_DIR', kunit_dir)
	cache = tmp_path / 'cache'
	rdir = write_results(cache / 'results' / '20260101-000000', parser_tree,
			     {'x86_64': ktap_console(ALPHA), 'i386': ktap_console(ALPHA)})
	(cache / 'results' / 'latest').symlink_to(rdir.name)
	assert cli.main(['baseline', '--cache-dir', str(cache), '--arch', 'i386']) == 0
	assert sorted(p.name for p in (kunit_dir / 'baselines').iterdir()) == ['i386.json']
	assert '3 cases (3 pass)' in capsys.readouterr().out
	other = tmp_path / 'elsewhere'
	assert cli.main(['baseline', str(rdir), '--baseline-dir', str(other)]) == 0
	assert sorted(p.name for p in other.iterdir()) == ['i386.json', 'x86_64.json']


def test_cli_baseline_errors(tmp_path, parser_tree, capsys):
	assert cli.main(['baseline', str(tmp_path / 'nothing')]) == 2
	assert 'summary.json not found' in capsys.readouterr().err
	rdir = write_results(tmp_path / 'r', parser_tree, {'arm': None})
	assert cli.main(['baseline', str(rdir), '--baseline-dir', str(tmp_path / 'b')]) == 1
	assert 'no baseline written' in capsys.readouterr().err
	rdir = write_results(tmp_path / 'r2', tmp_path / 'no-tree', {'arm': None})
	assert cli.main(['baseline', str(rdir)]) == 2
	assert 'kunit_parser' in capsys.readouterr().err


# ----------------------------------------------------------------- compare


def record(tmp_path, parser_tree, consoles, **kw) -> Path:
	rdir = write_results(tmp_path / 'base-run', parser_tree, consoles, **kw)
	bdir = tmp_path / 'baselines'
	baseline.write_baselines(rdir, parser_tree, bdir)
	return bdir


def compare(tmp_path, parser_tree, bdir, consoles, name='now', **kw):
	rdir = write_results(tmp_path / name, parser_tree, consoles, **kw)
	return baseline.compare(rdir, parser_tree, bdir)


def test_compare_every_kind_of_change(tmp_path, parser_tree, capsys):
	bdir = record(tmp_path, parser_tree, {'x86_64': ktap_console(
		('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'ok'), ('four', 'ok'),
			   ('gone', 'ok'), ('sk', 'skip'), ('five', 'ok')]))})
	capsys.readouterr()
	rc, [c], _ = compare(tmp_path, parser_tree, bdir, {'x86_64': ktap_console(
		('alpha', [('one', 'not ok'), ('two', 'ok'), ('three', 'skip'), ('four', 'ok'),
			   ('sk', 'not ok'), ('five', 'ok'), ('fresh', 'ok')]))})
	assert rc == 1
	assert c.regressions == [('alpha.one', 'pass', 'fail')]
	assert c.fixes == [('alpha.two', 'fail', 'pass')]
	assert c.new == [('alpha.fresh', 'pass')]
	assert c.vanished == [('alpha.gone', 'pass')]       # the run was complete: gone, not cut off
	assert c.new_skips == [('alpha.three', 'pass')]
	assert c.changed == [('alpha.sk', 'skip', 'fail')]
	assert not c.env_diffs
	out = capsys.readouterr().out
	assert 'REGRESSION  alpha.one: pass -> fail' in out
	assert 'fixed       alpha.two: fail -> pass' in out
	assert 'new         alpha.fresh: pass' in out
	assert 'vanished    alpha.gone (was pass)' in out
	assert 'new skip    alpha.three (was pass)' in out
	assert 'environment: same as the baseline' in out
	assert out.rstrip().endswith('compare: x86_64 1 regression(s)')


def test_compare_without_regressions_exits_0(tmp_path, parser_tree, capsys):
	bdir = record(tmp_path, parser_tree, {'arm': ktap_console(
		('alpha', [('one', 'not ok'), ('two', 'ok')]))})
	rc, [c], _ = compare(tmp_path, parser_tree, bdir, {'arm': ktap_console(
		('alpha', [('one', 'ok'), ('two', 'skip'), ('three', 'not ok')]))})
	assert rc == 0
	assert c.fixes and c.new_skips and c.new == [('alpha.three', 'fail')]
	assert capsys.readouterr().out.rstrip().endswith('compare: no regressions')


def test_compare_crash_makes_the_rest_missing_a_regression(tmp_path, parser_tree):
	bdir = record(tmp_path, parser_tree, {'i386': ktap_console(ALPHA, BETA)})
	rc, [c], _ = compare(tmp_path, parser_tree, bdir, {'i386': ktap_console(
		('alpha', [('one', 'ok'), ('two', None), ('three', 'ok')]), BETA)})
	assert rc == 1
	assert c.regressions == [('alpha.three', 'pass', 'missing'), ('alpha.two', 'pass', 'crash'),
				 ('beta.p', 'pass', 'missing'), ('beta.q', 'pass', 'missing')]
	assert c.vanished == [] and c.status == 'CRASH'


def test_compare_build_failure_is_every_case_missing(tmp_path, parser_tree):
	bdir = record(tmp_path, parser_tree, {'arm': ktap_console(BETA)})
	rc, [c], _ = compare(tmp_path, parser_tree, bdir, {'arm': None})
	assert rc == 1
	assert c.regressions == [('beta.p', 'pass', 'missing'), ('beta.q', 'pass', 'missing')]


def test_compare_no_baseline_is_not_a_regression(tmp_path, parser_tree, capsys):
	bdir = record(tmp_path, parser_tree, {'x86_64': ktap_console(ALPHA)})
	capsys.readouterr()
	rc, comps, _ = compare(tmp_path, parser_tree, bdir, {
		'x86_64': ktap_console(ALPHA), 'arm64': ktap_console(('alpha', [('one', 'not ok')]))})
	assert rc == 0
	assert [c.has_baseline for c in comps] == [True, False]
	out = capsys.readouterr().out
	assert f'arm64: no baseline ({bdir / "arm64.json"} does not exist)' in out
	assert 'not a regression' in out


def test_compare_across_environments_names_what_changed(tmp_path, parser_tree, capsys):
	bdir = record(tmp_path, parser_tree, {'x86_64': ktap_console(ALPHA)})
	capsys.readouterr()
	rc, [c], _ = compare(tmp_path, parser_tree, bdir, {'x86_64': ktap_console(
		('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'ok')]),
		compiler='gcc (Debian 13.2.0-1) 13.2.0')}, config_hash='cfg-2', series_hash='series-2')
	assert rc == 1                     # regressions still count
	assert c.across_environments
	assert [d[0] for d in c.env_diffs] == ['compiler', 'config hash']
	assert c.env_diffs[0] == ('compiler', GCC, 'gcc (Debian 13.2.0-1) 13.2.0')
	out = capsys.readouterr().out
	assert 'WARNING: comparison across environments: compiler differs' in out
	assert "config hash differs (baseline 'cfg-1', now 'cfg-2')" in out
	assert 'kernel package differs' not in out and 'QEMU differs' not in out
	assert 'series changed since the baseline: series-1 -> series-2' in out
	assert 'REGRESSION  alpha.two: pass -> fail' in out
	assert '[across environments]' in out
	assert 'across environments (compiler, config hash changed)' in out


def test_compare_kernel_and_qemu_changes_and_unknown_parts(tmp_path, parser_tree, capsys):
	bdir = record(tmp_path, parser_tree, {'arm': ktap_console(ALPHA)})
	capsys.readouterr()
	rc, [c], _ = compare(tmp_path, parser_tree, bdir, {'arm': ktap_console(ALPHA)},
			     debver='6.12.119-1~deb12u1', qemu='QEMU emulator version 8.0', config_hash='')
	assert rc == 0
	assert [d[0] for d in c.env_diffs] == ['kernel package', 'QEMU']
	assert c.env_unknown == ['config hash unknown now']
	out = capsys.readouterr().out
	assert "kernel package differs (baseline '6.12.118-1~deb12u1', now '6.12.119-1~deb12u1')" in out


def test_compare_only_what_the_filter_selected(tmp_path, parser_tree):
	bdir = record(tmp_path, parser_tree, {'x86_64': ktap_console(ALPHA, BETA)})
	rc, [c], _ = compare(tmp_path, parser_tree, bdir, {'x86_64': ktap_console(BETA)},
			     filter_glob='be*')
	assert rc == 0 and not c.vanished and not c.regressions
	rc, [c], _ = compare(tmp_path, parser_tree, bdir, {'x86_64': ktap_console(
		('alpha', [('two', 'ok')]))}, name='now2', filter_glob='alpha.t*')
	assert c.vanished == [('alpha.three', 'pass')] and rc == 0


def test_in_filter():
	assert baseline.in_filter('a.b', '')
	assert baseline.in_filter('autofs_protocol.x/p', 'autofs_*')
	assert not baseline.in_filter('list.x', 'autofs_*')
	assert baseline.in_filter('autofs.no_pipe/p1', 'autofs.no_*')
	assert not baseline.in_filter('autofs.second', 'autofs.no_*')
	assert baseline.in_filter('autofs', 'autofs.x')        # a suite-level row


def test_cli_compare_default_dir_exit_codes(tmp_path, parser_tree, monkeypatch, capsys):
	monkeypatch.setattr(paths, 'KUNIT_DIR', tmp_path / 'kunit')
	base = write_results(tmp_path / 'base', parser_tree, {'x86_64': ktap_console(ALPHA)})
	assert cli.main(['baseline', str(base)]) == 0
	assert (tmp_path / 'kunit' / 'baselines' / 'x86_64.json').is_file()
	same = write_results(tmp_path / 'same', parser_tree, {'x86_64': ktap_console(ALPHA)})
	assert cli.main(['compare', str(same)]) == 0
	worse = write_results(tmp_path / 'worse', parser_tree, {'x86_64': ktap_console(
		('alpha', [('one', 'ok'), ('two', 'ok'), ('three', 'not ok')]))})
	assert cli.main(['compare', str(worse)]) == 1
	# An empty baseline directory: no baseline for the arch, not a regression.
	(tmp_path / 'none').mkdir()
	assert cli.main(['compare', str(worse), '--baseline-dir', str(tmp_path / 'none')]) == 0
	# One that does not exist is a mistake (issue #17): exit 2, not "no baseline".
	assert cli.main(['compare', str(worse), '--baseline-dir', str(tmp_path / 'nil')]) == 2
	(tmp_path / 'bad').mkdir()
	(tmp_path / 'bad' / 'x86_64.json').write_text('{"cases": 3}')
	assert cli.main(['compare', str(worse), '--baseline-dir', str(tmp_path / 'bad')]) == 2
	assert 'not a baseline' in capsys.readouterr().err


# -------------------------------------------------------------- divergence


def test_divergence_flags_word_size_pairs_and_missing(tmp_path, parser_tree):
	rdir = write_results(tmp_path / 'r', parser_tree, {
		'x86_64': ktap_console(ALPHA, BETA),
		'i386': ktap_console(('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'ok')]),
				     BETA),
		'arm': ktap_console(ALPHA),
		'arm64': ktap_console(ALPHA, ('beta', [('p', 'skip'), ('q', 'ok')]))})
	_, results = baseline.load_results(rdir, parser_tree, probe=False)
	div = baseline.divergence(results)
	rows = {d['case']: d for d in div['cases']}
	assert sorted(rows) == ['alpha.two', 'beta.p', 'beta.q']
	assert rows['alpha.two']['statuses'] == {'x86_64': 'pass', 'i386': 'fail', 'arm': 'pass',
						 'arm64': 'pass'}
	assert rows['alpha.two']['word_size_suspect'] == ['i386<->x86_64']
	# beta never ran on arm: missing there, never a pass.
	assert rows['beta.q']['statuses']['arm'] == 'missing'
	assert rows['beta.q']['word_size_suspect'] == ['arm<->arm64']
	assert rows['beta.p']['statuses']['arm64'] == 'skip'
	text = '\n'.join(baseline.format_divergence(div))
	assert ('alpha.two: pass on x86_64, arm, arm64; FAIL on i386  '
		'[word-size suspect: i386<->x86_64]') in text
	assert 'beta.q: pass on x86_64, i386, arm64; missing on arm  [word-size suspect: arm<->arm64]' \
		in text


def test_divergence_flags_a_byte_order_split(tmp_path, parser_tree):
	"""A case that passes on every little-endian arch and fails on a
	big-endian one (or the other way round) is a byte-order suspect."""
	fail_two = ('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'ok')])
	fail_three = ('alpha', [('one', 'ok'), ('two', 'ok'), ('three', 'not ok')])
	rdir = write_results(tmp_path / 'r', parser_tree, {
		'x86_64': ktap_console(ALPHA, BETA),
		'arm64': ktap_console(fail_three, BETA),
		's390x': ktap_console(fail_two, BETA),
		'powerpc64': ktap_console(ALPHA, ('beta', [('p', 'not ok'), ('q', 'ok')])),
		'm68k': ktap_console(fail_two, BETA)})
	_, results = baseline.load_results(rdir, parser_tree, probe=False)
	rows = {d['case']: d for d in baseline.divergence(results)['cases']}
	assert sorted(rows) == ['alpha.three', 'alpha.two', 'beta.p']
	# Fails on two of the three big-endian arches, passes on both little-endian ones.
	assert rows['alpha.two']['byte_order_suspect'] == 'big'
	assert rows['beta.p']['byte_order_suspect'] == 'big'
	# Fails on one little-endian arch, passes on every big-endian one.
	assert rows['alpha.three']['byte_order_suspect'] == 'little'
	text = '\n'.join(baseline.format_divergence(baseline.divergence(results)))
	assert ('alpha.two: pass on x86_64, arm64, powerpc64; FAIL on s390x, m68k  '
		'[byte-order suspect: fails on big-endian, passes on every arch of the other '
		'byte order]') in text


@pytest.mark.parametrize('statuses, want', [
	({'x86_64': 'pass', 's390x': 'fail'}, 'big'),
	({'x86_64': 'crash', 's390x': 'pass'}, 'little'),
	({'x86_64': 'pass', 'arm': 'fail', 's390x': 'fail'}, ''),     # fails on both orders
	({'x86_64': 'pass', 'arm': 'fail', 's390x': 'skip'}, ''),     # the other is no pass
	({'x86_64': 'pass', 'arm': 'fail'}, ''),                      # one byte order only
	({'x86_64': 'pass', 's390x': 'missing', 'powerpc64': 'pass'}, 'big'),
	({'x86_64': 'pass', 'um': 'fail', 'unknown': 'fail'}, ''),    # um is little-endian
])
def test_byte_order_suspect(statuses, want):
	assert baseline.byte_order_suspect(statuses) == want


def test_divergence_an_arch_without_results_is_named_once(tmp_path, parser_tree):
	rdir = write_results(tmp_path / 'r', parser_tree, {
		'x86_64': ktap_console(ALPHA), 'arm': None, 'arm64': ktap_console(ALPHA)})
	_, results = baseline.load_results(rdir, parser_tree, probe=False)
	div = baseline.divergence(results)
	assert div == {'cases': [], 'no_results': {'arm': 'BUILD_FAILED'}}
	assert baseline.format_divergence(div) == [
		'  arm: no case results (BUILD_FAILED); every case is missing there']


def test_compare_prints_divergence(tmp_path, parser_tree, capsys):
	bdir = tmp_path / 'empty'
	rc, _, div = compare(tmp_path, parser_tree, bdir, {
		'arm': ktap_console(('alpha', [('one', 'ok')])),
		'arm64': ktap_console(('alpha', [('one', 'not ok')]))})
	assert rc == 0 and div['cases']
	out = capsys.readouterr().out
	assert 'Cross-arch divergence (this run):' in out
	assert 'alpha.one: pass on arm; FAIL on arm64  [word-size suspect: arm<->arm64]' in out


# ------------------------------------------------------- run: the stub kunit.py

# Like test_run.STUB, plus: --list_tests prints <arch>.list; a boot with
# filter glob G prints <arch>.console@G.<n> (its n-th boot with G) or
# <arch>.console@G, else <arch>.console; <arch>.exec@G is its output;
# build writes <arch>.config to <build_dir>/.config; with <arch>.hang@G a
# boot with G never ends once it has written all that (conftest.STUB_HANG).
STUB = STUB_ARGS + STUB_HANG + r'''with open(ctl / 'calls.jsonl', 'a') as f:
	f.write(json.dumps({'verb': verb, 'argv': rest, 'glob': glob, 'list': listing}) + '\n')

def get(name, default=None):
	p = ctl / f'{arch}.{name}'
	return p.read_text() if p.exists() else default

build_dir = Path(opts['build_dir'][0])
if verb == 'build':
	build_dir.mkdir(exist_ok=True)
	if get('config') is not None:
		(build_dir / '.config').write_text(get('config'))
	print('[07:00:42] Building KUnit Kernel ...')
	sys.exit(int(get('build_rc', '0')))
if verb == 'exec' and listing:
	print('[07:01:00] Starting KUnit Kernel (1/1)...')
	(build_dir / 'test.log').write_text('KTAP version 1\n1..0\n')
	sys.stdout.write(get('list', ''))
	sys.exit(int(get('list_rc', '0')))
if verb == 'exec':
	counter = ctl / f'{arch}.count@{glob}'
	n = int(counter.read_text()) + 1 if counter.exists() else 1
	counter.write_text(str(n))
	console = get('console')
	if glob:
		console = get(f'console@{glob}.{n}', get(f'console@{glob}', console))
	if console is not None:
		(build_dir / 'test.log').write_text(console)
	sys.stdout.write(get(f'exec@{glob}', get('exec', '[07:01:02] Starting KUnit Kernel (1/1)...\n')))
	if 'json' in opts:
		Path(opts['json'][0]).write_text('{"name": "KUnit Test Group"}\n')
	if get(f'hang@{glob}') is not None:
		hang()
	sys.exit(int(get('exec_rc', '0')))
sys.exit(f'stub kunit.py: unexpected verb {verb}')
'''


@pytest.fixture
def rf(main_env):
	f = main_env
	(f.tree / 'tools' / 'testing' / 'kunit' / 'kunit.py').write_text(STUB)

	def ctl(arch, name, text):
		(f.ctl / f'{arch}.{name}').write_text(text)
	f.ctl_write = ctl
	return f


def verdict(f, arch):
	return json.loads((f.results / arch / 'verdict.json').read_text())


def summary(f):
	return json.loads((f.results / 'summary.json').read_text())


CRASHING = ktap_console(ALPHA, ('beta', [('p', 'ok'), ('q', None), ('r', 'ok')]),
			total=4)
LISTED = 'alpha.one\nalpha.two\nalpha.three\nbeta.p\nbeta.q\nbeta.r\ngamma.x\ndelta.y\n'


def stage_crash(f, gamma: str = 'ok', delta: str = 'ok') -> None:
	"""x86_64's first boot crashes in beta.q (CRASHING), the --list_tests
	boot gives LISTED, and the boots that continue run gamma.x and delta.y
	with these results."""
	f.ctl_write('x86_64', 'console', CRASHING)
	f.ctl_write('x86_64', 'list', LISTED)
	f.ctl_write('x86_64', 'console@gamma', ktap_console(('gamma', [('x', gamma)])))
	f.ctl_write('x86_64', 'console@delta', ktap_console(('delta', [('y', delta)])))


def test_crash_reruns_the_suites_it_cut_off(rf, capsys):
	f = rf
	stage_crash(f, delta='not ok')
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--suite-timeout', '45')))
	assert rc == 1
	execs = f.calls('exec')
	assert [(c['glob'], c['list']) for c in execs] == [
		('', False), ('', True), ('gamma', False), ('delta', False)]
	assert '--timeout=300' in execs[0]['argv']
	assert all('--timeout=45' in c['argv'] for c in execs[1:])
	out = f.results / 'x86_64'
	for name in ('console.log', 'console.2.log', 'console.3.log', 'kunit.2.log',
		     'kunit.list.log', 'results.2.json'):
		assert (out / name).is_file(), name
	assert 'gamma' in (out / 'console.2.log').read_text()
	ktap_log = (out / 'ktap.log').read_text()
	assert ktap_log.count('KTAP version 1\n1..') == 3          # three test boots
	assert ktap_log.index('# Subtest: beta') < ktap_log.index('# Subtest: gamma') \
		< ktap_log.index('# Subtest: delta')
	v = verdict(f, 'x86_64')
	assert v['status'] == 'CRASH'                   # the crash is still the verdict
	assert [(b['purpose'], b['filter'], b.get('status')) for b in v['boots']] == [
		('list', '', None), ('continue', 'gamma', 'PASS'), ('continue', 'delta', 'FAIL')]
	assert (v['passed'], v['failed'], v['crashed']) == (5, 1, 2)
	# beta's third case never ran: kunit.list.log names it (beta.r), not its position.
	assert v['failures'] == ['beta.q: TEST_CRASHED', 'beta.r: TEST_CRASHED',
				 'delta.y: FAILURE']
	assert 're-ran 2 suite(s) the crash cut off' in v['reason']
	assert 'reports not written' not in capsys.readouterr().err
	assert (f.results / 'junit.xml').is_file() and (f.results / 'index.html').is_file()
	_, [a] = baseline.load_results(f.results, f.tree, probe=False)
	assert a.cases == {'alpha.one': 'pass', 'alpha.two': 'pass', 'alpha.three': 'pass',
			   'beta.p': 'pass', 'beta.q': 'crash', 'beta.r': 'missing', 'gamma.x': 'pass',
			   'delta.y': 'fail'}


def test_a_listing_kunit_py_gave_up_on_starts_no_boot(rf):
	"""The --list_tests boot panicked and kunit.py exec died in a traceback
	(exit 1): what it printed is no list of tests, so no suite is made up
	from it and none is re-run; the crash stays the verdict."""
	f = rf
	stage_crash(f)
	f.ctl_write('x86_64', 'list', 'Traceback (most recent call last):\n'
		    '    main(sys.argv[1:])\n    lines.pop()\n' + LISTED)
	f.ctl_write('x86_64', 'list_rc', '1')
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache')))
	assert rc == 1
	assert [(c['glob'], c['list']) for c in f.calls('exec')] == [('', False), ('', True)]
	v = verdict(f, 'x86_64')
	assert v['status'] == 'CRASH'
	assert [(b['purpose'], b['exit'], b['tests']) for b in v['boots']] == [('list', 1, 0)]
	assert 'exited 1: its listing is not read' in v['boots'][0]['reason']


def test_crash_rerun_keeps_going_past_a_second_crash(rf):
	f = rf
	f.ctl_write('arm', 'console', CRASHING)
	f.ctl_write('arm', 'list', LISTED)
	f.ctl_write('arm', 'console@gamma', ktap_console(('gamma', [('x', None)])))
	f.ctl_write('arm', 'console@delta', ktap_console(('delta', [('y', 'ok')])))
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'arm', '--no-ccache')))
	v = verdict(f, 'arm')
	assert [b['status'] for b in v['boots'][1:]] == ['CRASH', 'PASS']
	assert all('--timeout=120' in c['argv'] for c in f.calls('exec')[1:])
	_, [a] = baseline.load_results(f.results, f.tree, probe=False)
	assert a.cases['gamma.x'] == 'crash' and a.cases['delta.y'] == 'pass'


def test_a_crash_rerun_boot_that_never_ends_is_a_crash(rf, monkeypatch):
	"""The boot of gamma (a suite the crash cut off) goes on for ever, as a
	kunit.py exec whose parser loops: it is killed at --suite-timeout +
	EXEC_GRACE and is a CRASH, never a pass; delta still runs."""
	f = rf
	monkeypatch.setattr(plan, 'EXEC_GRACE', 0.5)
	deadline_after(monkeypatch, 1, '[CRASHED]')      # once it has written it all
	stage_crash(f)
	f.ctl_write('x86_64', 'hang@gamma', '')
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--suite-timeout', '1'))) == 1
	v = verdict(f, 'x86_64')
	assert v['status'] == 'CRASH'
	gamma, delta = v['boots'][1:]
	assert (gamma['filter'], gamma['status'], gamma['exit']) == ('gamma', 'CRASH',
								     runner.progress.PAST_DEADLINE)
	assert gamma['reason'] == (
		'kunit.py exec did not end within 0.5 s of its guest timeout (1 s), or printed one '
		'line 100,000 times in a row, and was killed; its console parser may loop on this '
		'console: see console.2.log')
	assert (delta['filter'], delta['status']) == ('delta', 'PASS')
	assert 'not PASS: gamma CRASH' in v['reason']
	assert (f.results / 'x86_64' / 'kunit.2.log').read_text().splitlines()[-1].startswith(
		'[bkl-kunit] still running 1.5 s after it was started (its deadline)')
	assert all_ended([int((f.ctl / 'x86_64.exec_child').read_text())])


def test_a_rerun_that_never_ends_does_not_make_a_failure_flaky(rf, monkeypatch):
	"""--rerun-failures: a boot killed at its deadline is no pass of the
	case, whatever its console shows."""
	f = rf
	monkeypatch.setattr(plan, 'EXEC_GRACE', 0.5)
	deadline_after(monkeypatch, 1, '[CRASHED]')      # once it has written it all
	f.ctl_write('x86_64', 'console', FAILING)
	f.ctl_write('x86_64', 'console@alpha.two', ktap_console(('alpha', [('two', 'ok')])))
	f.ctl_write('x86_64', 'hang@alpha.two', '')
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--rerun-failures', '1',
			     '--suite-timeout', '1')))
	assert rc == 1
	v = verdict(f, 'x86_64')
	assert v['status'] == 'FAIL' and v['flaky'] == [] and v['failures'] == ['alpha.two: FAILURE']
	[rerun_boot] = v['boots']
	assert rerun_boot['status'] == 'CRASH' and rerun_boot['reason'].startswith(
		'kunit.py exec did not end within 0.5 s of its guest timeout (1 s)')


def test_crash_rerun_applies_the_case_part_of_the_filter(rf):
	f = rf
	f.ctl_write('x86_64', 'console', CRASHING)
	f.ctl_write('x86_64', 'list', 'beta.q\ngamma.q\n')
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '*.q')))
	assert [c['glob'] for c in f.calls('exec')] == ['*.q', '*.q', 'gamma.q']


def test_crash_rerun_when_nothing_is_listed(rf):
	f = rf
	f.ctl_write('x86_64', 'console', CRASHING)
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache')))
	assert [c['list'] for c in f.calls('exec')] == [False, True]
	v = verdict(f, 'x86_64')
	assert v['status'] == 'CRASH'
	assert 'listed nothing (see kunit.list.log)' in v['reason']
	assert [b['purpose'] for b in v['boots']] == ['list']


def test_crash_in_the_last_suite_needs_no_other_boot(rf):
	f = rf
	f.ctl_write('x86_64', 'console', ktap_console(ALPHA, ('beta', [('p', 'ok'), ('q', None)])))
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache')))
	assert len(f.calls('exec')) == 1
	v = verdict(f, 'x86_64')
	assert v['status'] == 'CRASH' and v['boots'] == []


def test_no_crash_rerun_and_no_ktap(rf):
	f = rf
	f.ctl_write('x86_64', 'console', CRASHING)
	f.ctl_write('arm', 'console', 'Booting Linux\nKernel panic - not syncing: Fatal exception\n')
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,arm', '--no-ccache', '--no-crash-rerun')))
	assert len(f.calls('exec', 'x86_64')) == 1
	assert len(f.calls('exec', 'arm')) == 1         # no KTAP: nothing to continue after
	assert verdict(f, 'x86_64')['status'] == 'CRASH'


def test_a_hang_is_continued_like_a_crash(rf):
	f = rf
	hang = ('KTAP version 1\n1..2\n    KTAP version 1\n    # Subtest: alpha\n    1..2\n'
		'    ok 1 one\n    # two: waiting\n')
	f.ctl_write('arm64', 'console', hang)
	f.ctl_write('arm64', 'exec', "Command 'qemu' timed out after 300 seconds\n")
	f.ctl_write('arm64', 'exec@beta', 'done\n')
	f.ctl_write('arm64', 'list', 'alpha.one\nalpha.two\nbeta.p\n')
	f.ctl_write('arm64', 'console@beta', ktap_console(('beta', [('p', 'ok')])))
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'arm64', '--no-ccache')))
	v = verdict(f, 'arm64')
	assert v['status'] == 'TIMEOUT'
	assert [b['filter'] for b in v['boots']] == ['', 'beta']
	_, [a] = baseline.load_results(f.results, f.tree, probe=False)
	assert a.cases == {'alpha.one': 'pass', 'alpha.two': 'crash', 'beta.p': 'pass'}


FAILING = ktap_console(('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'ok')]), BETA)


def test_rerun_failures_off_by_default(rf):
	f = rf
	f.ctl_write('x86_64', 'console', FAILING)
	args = f.args('--arch', 'x86_64', '--no-ccache')
	assert args.rerun_failures == 0 and args.suite_timeout == 120
	runner.main(plan.RunRequest.from_args(args))
	assert len(f.calls('exec')) == 1
	v = verdict(f, 'x86_64')
	assert v['status'] == 'FAIL' and v['flaky'] == [] and v['boots'] == []


def test_a_failure_that_passes_on_its_own_is_flaky(rf, capsys):
	f = rf
	f.ctl_write('x86_64', 'console', FAILING)
	f.ctl_write('x86_64', 'console@alpha.two.1', ktap_console(('alpha', [('two', 'not ok')])))
	f.ctl_write('x86_64', 'console@alpha.two.2', ktap_console(('alpha', [('two', 'ok')])))
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--rerun-failures', '3')))
	assert rc == 1                                   # a flaky test fails the run
	assert [c['glob'] for c in f.calls('exec')] == ['', 'alpha.two', 'alpha.two']
	v = verdict(f, 'x86_64')
	assert v['status'] == 'FLAKY'
	assert v['flaky'] == ['alpha.two']
	assert v['failures'] == [] and v['failed'] == 0 and v['passed'] == 4
	assert [b['purpose'] for b in v['boots']] == ['rerun', 'rerun']
	assert (f.results / 'x86_64' / 'console.3.log').is_file()
	s = summary(f)
	assert s['arches'][0]['status'] == 'FLAKY' and s['arches'][0]['flaky'] == ['alpha.two']
	out = capsys.readouterr().out
	table = runner.format_table([model.ArchResult(**a) for a in s['arches']])
	assert table in out
	assert table.splitlines()[0].split()[6] == 'flaky'
	assert table.splitlines()[2].split()[:7] == ['x86_64', 'FLAKY', '4', '0', '0', '0', '1']
	assert 'FLAKY alpha.two: failed, then passed on its own' in out
	assert 'WARNING: flaky cases' in out
	_, [a] = baseline.load_results(f.results, f.tree, probe=False)
	assert a.cases['alpha.two'] == 'flaky'
	# The reports were written and call the arch a failure.
	assert 'reports not written' not in capsys.readouterr().err
	kcidb = json.loads((f.results / 'kcidb.json').read_text())
	[whole] = [t for t in kcidb['tests'] if t['path'] == 'kunit']
	assert whole['status'] == 'FAIL' and whole['misc']['arch_status'] == 'FLAKY'


def test_a_failure_that_keeps_failing_stays_a_failure(rf):
	f = rf
	f.ctl_write('x86_64', 'console', ktap_console(
		('alpha', [('one', 'not ok'), ('two', 'not ok'), ('three', 'ok')])))
	f.ctl_write('x86_64', 'console@alpha.one', ktap_console(('alpha', [('one', 'not ok')])))
	f.ctl_write('x86_64', 'console@alpha.two', ktap_console(('alpha', [('two', 'ok')])))
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--rerun-failures', '2')))
	assert rc == 1
	assert [c['glob'] for c in f.calls('exec')] == ['', 'alpha.one', 'alpha.one', 'alpha.two']
	assert all('--timeout=120' in c['argv'] for c in f.calls('exec')[1:])
	v = verdict(f, 'x86_64')
	assert v['status'] == 'FAIL'
	assert v['flaky'] == ['alpha.two'] and v['failures'] == ['alpha.one: FAILURE']
	assert (v['passed'], v['failed']) == (1, 1)


def test_flaky_and_compare(rf, tmp_path, capsys):
	f = rf
	f.ctl_write('x86_64', 'console', ktap_console(ALPHA))
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache'))) == 0
	bdir = tmp_path / 'bl'
	baseline.write_baselines(f.results, f.tree, bdir)
	f.ctl_write('x86_64', 'console', FAILING)
	f.ctl_write('x86_64', 'console@alpha.two', ktap_console(('alpha', [('two', 'ok')])))
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--rerun-failures', '1'))) == 1
	rc, [c], _ = baseline.compare(f.results, f.tree, bdir)
	assert rc == 0                                    # flaky: not a regression
	assert c.flaky == [('alpha.two', 'pass')] and c.new == [('beta.p', 'pass'), ('beta.q', 'pass')]
	assert 'FLAKY       alpha.two (was pass)' in capsys.readouterr().out


def test_config_hash_and_qemu_in_the_verdict(rf, monkeypatch):
	f = rf
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {'qemu': f'QEMU for {arch}'})
	f.ctl_write('arm', 'config', 'CONFIG_KUNIT=y\n')
	f.ctl_write('arm', 'console', ktap_console(ALPHA))
	f.ctl_write('arm64', 'build_rc', '1')
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'arm,arm64', '--no-ccache')))
	v = verdict(f, 'arm')
	assert v['config_hash'] == hashlib.sha256(b'CONFIG_KUNIT=y\n').hexdigest()
	assert v['qemu'] == 'QEMU for arm'
	assert summary(f)['arches'][0]['config_hash'] == v['config_hash']
	assert verdict(f, 'arm64')['config_hash'] == ''
	_, results = baseline.load_results(f.results, f.tree, probe=False)
	assert results[0].environment['config_hash'] == v['config_hash']
	assert results[0].environment['qemu'] == 'QEMU for arm'


def test_run_summary_has_the_cross_arch_divergence(rf, capsys):
	f = rf
	f.ctl_write('x86_64', 'console', ktap_console(ALPHA))
	f.ctl_write('i386', 'console', FAILING)
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,i386', '--no-ccache')))
	assert rc == 1
	div = summary(f)['divergence']
	assert div['no_results'] == {}
	assert [d['case'] for d in div['cases']] == ['alpha.two', 'beta.p', 'beta.q']
	assert div['cases'][0]['word_size_suspect'] == ['i386<->x86_64']
	assert div['cases'][1]['statuses'] == {'x86_64': 'missing', 'i386': 'pass'}
	out = capsys.readouterr().out
	assert 'Cross-arch divergence' in out
	assert 'alpha.two: pass on x86_64; FAIL on i386  [word-size suspect: i386<->x86_64]' in out


def test_one_arch_run_has_no_divergence(rf, capsys):
	f = rf
	f.ctl_write('x86_64', 'console', FAILING)
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache')))
	assert 'divergence' not in summary(f)
	assert 'Cross-arch divergence' not in capsys.readouterr().out


def test_run_compare(rf, tmp_path, capsys):
	f = rf
	bdir = tmp_path / 'bl'
	bdir.mkdir()          # a --baseline-dir that does not exist is refused (issue #17)
	f.ctl_write('x86_64', 'console', ktap_console(ALPHA))
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--compare',
			       '--baseline-dir', str(bdir)))) == 0
	assert 'x86_64: no baseline' in capsys.readouterr().out
	baseline.write_baselines(f.results, f.tree, bdir)
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--compare',
			       '--baseline-dir', str(bdir)))) == 0
	assert 'compare: no regressions' in capsys.readouterr().out
	f.ctl_write('x86_64', 'console', FAILING)
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--compare',
			       '--baseline-dir', str(bdir)))) == 1
	assert 'REGRESSION  alpha.two: pass -> fail' in capsys.readouterr().out


def test_run_compare_default_baseline_dir(rf, tmp_path, monkeypatch, capsys):
	f = rf
	f.ctl_write('x86_64', 'console', ktap_console(ALPHA))
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache')))
	baseline.write_baselines(f.results, f.tree, paths.KUNIT_DIR / 'baselines')
	assert (f.repo / 'kunit' / 'baselines' / 'x86_64.json').is_file()
	f.ctl_write('x86_64', 'console', ktap_console(('alpha', [('one', 'ok'), ('two', 'ok'),
								 ('three', None)])))
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--compare'))) == 1
	assert 'REGRESSION  alpha.three: pass -> crash' in capsys.readouterr().out


def test_run_parser_new_flags():
	args = cli.build_parser().parse_args(['run', '--rerun-failures', '2', '--suite-timeout', '60',
					      '--compare', '--baseline-dir', 'x', '--no-crash-rerun'])
	assert (args.rerun_failures, args.suite_timeout, args.compare, args.baseline_dir,
		args.no_crash_rerun) == (2, 60, True, 'x', True)
	args = cli.build_parser().parse_args(['run'])
	assert (args.rerun_failures, args.suite_timeout, args.compare, args.no_crash_rerun) == (
		0, plan.DEFAULT_SUITE_TIMEOUT, False, False)
	assert args.timeout is None and plan.RunOptions.from_args(args).guest_timeout() == 300


def test_format_table_without_flakes_is_unchanged():
	rs = [model.ArchResult('x86_64', 'PASS', passed=3)]
	assert runner.format_table(rs).splitlines()[0].split() == [
		'arch', 'status', 'passed', 'failed', 'skipped', 'crashed', 'build', 's', 'run', 's']


# ------------------------------------------------------------------ pieces


def test_merge_boots_replaces_never_started_suites(parser_tree):
	first = parse_console(parser_tree, CRASHING.splitlines(), 'CRASH: panic')
	assert [s.name for s in first] == ['alpha', 'beta', 'suite_3', 'suite_4']
	assert all(model.placeholder_suite(s) for s in first[2:])
	gamma = parse_console(parser_tree, ktap_console(('gamma', [('x', 'ok')])).splitlines())
	merged = model.merge_boots(first, [gamma])
	assert [s.name for s in merged] == ['alpha', 'beta', 'gamma']
	assert model.merge_boots(first, []) == first
	assert model.case_map(first) == {'alpha.one': 'pass', 'alpha.two': 'pass',
					    'alpha.three': 'pass', 'beta.p': 'pass', 'beta.q': 'crash'}


def test_listed_tests_pattern():
	lines = ['$ kunit.py exec --list_tests', '[07:01:00] Starting KUnit Kernel (1/1)...',
		 'alpha.one', 'beta.p', 'KTAP version 1', '[07:01:02] Elapsed time: 1.0s']
	assert [l for l in lines if kunit_tool.LISTED.match(l)] == ['alpha.one', 'beta.p']
	# kunit.py's traceback when the listing boot panicked (results
	# 20261207-171052, coverage x86_64): none of it is a test.
	traceback = ['Traceback (most recent call last):', '    main(sys.argv[1:])',
		     '    lines.pop()', 'ValueError: LineStream: going past EOF, last line was ',
		     'kunit-try-catch-test.kunit_test_try_catch_successful_try_no_catch']
	assert kunit_tool.listed_tests('$ kunit.py\n' + '\n'.join(traceback)) == [
		'kunit-try-catch-test.kunit_test_try_catch_successful_try_no_catch']
	assert laterboots._suites_in_order(['a.x', 'a.y', 'b.z', 'a.w']) == ['a', 'b']


def test_config_hash_of_older_results_from_the_build_dir(tmp_path, parser_tree):
	"""Results from before verdict.json had config_hash: the build directory's
	.config counts when it is not newer than the run."""
	import os
	cache = tmp_path / 'cache'
	cfg = cache / 'build' / 'debian' / 'x86_64' / '.config'
	cfg.parent.mkdir(parents=True)
	cfg.write_text('CONFIG_KUNIT=y\n')
	os.utime(cfg, (1000, 1000))
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})
	v = json.loads((rdir / 'x86_64' / 'verdict.json').read_text())
	del v['config_hash']
	(rdir / 'x86_64' / 'verdict.json').write_text(json.dumps(v))
	s = json.loads((rdir / 'summary.json').read_text())
	del s['arches'][0]['config_hash']
	(rdir / 'summary.json').write_text(json.dumps(s))
	_, [a] = baseline.load_results(rdir, parser_tree, probe=False, cache=cache)
	assert a.environment['config_hash'] == hashlib.sha256(b'CONFIG_KUNIT=y\n').hexdigest()
	_, [a] = baseline.load_results(rdir, parser_tree, probe=False)
	assert a.environment['config_hash'] == ''
	os.utime(cfg, None)                      # rebuilt after the run: not that run's config
	os.utime(rdir / 'summary.json', (2000, 2000))
	_, [a] = baseline.load_results(rdir, parser_tree, probe=False, cache=cache)
	assert a.environment['config_hash'] == ''


def test_after_a_crash_every_file_counts_the_same_cases(rf):
	f = rf
	stage_crash(f, delta='not ok')
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache')))
	v = verdict(f, 'x86_64')
	root = ET.parse(f.results / 'junit.xml').getroot()
	suites = {ts.get('name') for ts in root.iter('testsuite')}
	assert {'x86_64.gamma', 'x86_64.delta'} <= suites
	tcs = list(root.iter('testcase'))
	got = {'passed': sum(not list(tc) for tc in tcs),
	       'failed': sum(tc.find('failure') is not None for tc in tcs),
	       'crashed': sum(tc.find('error') is not None or (
		       tc.find('skipped') is not None and
		       tc.find('skipped').get('message', '').startswith('not run')) for tc in tcs)}
	assert got == {k: v[k] for k in got} == {'passed': 5, 'failed': 1, 'crashed': 2}
	kcidb = json.loads((f.results / 'kcidb.json').read_text())
	paths = {t['path'] for t in kcidb['tests']}
	assert {'kunit.gamma.x', 'kunit.delta.y'} <= paths
	assert 'delta.y' in (f.results / 'index.html').read_text()
