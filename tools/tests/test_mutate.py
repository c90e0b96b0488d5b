# SPDX-License-Identifier: GPL-2.0
"""`kunit.py mutate` (issue #30): lock sites found from small recorded
trees (tools/tests/data/mutate/tree), the mutant's text, the journal that
puts a file back after an interruption, verdicts from recorded per-case
results, mutate.json and mutate.html, bad options.  No kernel is built:
runner.run_arch is a stand-in that looks at the tree while it "builds"."""

import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from bklkunit import cli
from bklkunit.analysis import mutate, mutsites
from bklkunit.analysis.mutsites import Kind
from bklkunit.base.errors import UserError
from bklkunit.results.model import ArchResult, ArchStatus, Case, Outcome
from bklkunit.run import runner
from bklkunit.source import tree

DATA_TREE = Path(__file__).resolve().parent / 'data' / 'mutate' / 'tree'


@pytest.fixture
def ktree(tmp_path) -> Path:
	t = tmp_path / 'linux'
	shutil.copytree(DATA_TREE, t)
	return t


def sites_by_id(ktree, subs=('ufs', 'appletalk', 'autofs')):
	sites, unpaired, problems = mutsites.discover(ktree, list(subs))
	assert problems == []
	return {s.id: s for s in sites}, {s.id: s for s in unpaired}


# ------------------------------------------------------------------ discovery


def test_sites_found_from_the_source(ktree):
	sites, unpaired = sites_by_id(ktree)
	assert sorted(sites) == sorted([
		'fs/ufs/x.c:ufs_statfs:UFS_SB(sb)->s_lock',
		'fs/ufs/x.c:ufs_statfs:UFS_I(inode)->meta_lock',
		'fs/ufs/x.c:ufs_statfs:sb->s_inode_list_lock',
		'net/appletalk/ddp.c:atalk_bind:sk',
		'net/appletalk/ddp.c:atalk_bind:atalk_sockets_lock',
		'net/appletalk/ddp.c:atalk_ioctl:CAP_NET_ADMIN',
		'net/appletalk/ddp.c:atalk_ioctl:rtnl',
		'fs/autofs/autofs_i.h:autofs_add_expiring:sbi->lookup_lock',
		'fs/autofs/root.c:autofs_lookup:sbi->lookup_lock',
		'fs/autofs/root.c:autofs_lookup:dentry->d_lock',
		'fs/autofs/root.c:autofs_lookup_active:sbi->lookup_lock',
		'fs/autofs/root.c:autofs_wait:sbi->wq_mutex',
		'fs/autofs/root.c:autofs_wait:sbi->fs_lock',
		'fs/autofs/root.c:autofs_ioctl:CAP_SYS_ADMIN',
		'fs/autofs/root.c:walk:p->d_lock+parent->d_lock'])
	# only released (its caller holds it), only taken (seq_file start)
	assert sorted(unpaired) == ['fs/autofs/root.c:autofs_notify:sbi->wq_mutex',
				    'net/appletalk/ddp.c:atalk_seq_start:atalk_sockets_lock']


def test_site_kinds_lines_and_subsystems(ktree):
	sites, _ = sites_by_id(ktree)
	s = sites['fs/autofs/root.c:autofs_lookup:sbi->lookup_lock']
	assert (s.subsystem, s.kind, s.line, s.lines) == ('autofs', Kind.SPINLOCK, 11, [15, 20, 25])
	assert [c.name for c in s.calls] == ['spin_lock', 'spin_unlock', 'spin_unlock']
	assert sites['fs/ufs/x.c:ufs_statfs:UFS_SB(sb)->s_lock'].kind == Kind.MUTEX
	meta = sites['fs/ufs/x.c:ufs_statfs:UFS_I(inode)->meta_lock']
	assert meta.kind == Kind.SEQLOCK and meta.lines == [13, 15, 19, 20]
	assert sites['fs/ufs/x.c:ufs_statfs:UFS_SB(sb)->s_lock'].line == 4   # not the prototype's 2
	assert sites['net/appletalk/ddp.c:atalk_bind:sk'].kind == Kind.SOCK
	assert sites['net/appletalk/ddp.c:atalk_bind:atalk_sockets_lock'].kind == Kind.RWLOCK
	assert sites['net/appletalk/ddp.c:atalk_ioctl:rtnl'].kind == Kind.RTNL
	cap = sites['fs/autofs/root.c:autofs_ioctl:CAP_SYS_ADMIN']
	assert cap.kind == Kind.CAPABILITY and [c.name for c in cap.calls] == ['capable', 'ns_capable']
	assert sites['fs/autofs/root.c:autofs_wait:sbi->wq_mutex'].lines == [47, 50, 51]
	assert sites['fs/autofs/autofs_i.h:autofs_add_expiring:sbi->lookup_lock'].subsystem == 'autofs'
	# spaces inside the call: the same lock
	assert sites['fs/autofs/root.c:autofs_lookup_active:sbi->lookup_lock'].lines == [33, 35]


def test_a_callee_that_lets_go_of_the_lock_is_named(ktree):
	sites, _ = sites_by_id(ktree)
	assert sites['fs/autofs/root.c:autofs_wait:sbi->wq_mutex'].released_by == ['autofs_notify']
	assert sites['fs/autofs/root.c:autofs_wait:sbi->fs_lock'].released_by == []
	assert mutate.site_notes(sites['fs/autofs/root.c:autofs_wait:sbi->wq_mutex']) == [
		'autofs_notify(), which it calls, lets go of the lock: without it here that unlock '
		'is unbalanced']


def test_a_static_function_nothing_uses_is_uncalled(ktree):
	sites, _ = sites_by_id(ktree)
	dead = sites['fs/autofs/autofs_i.h:autofs_add_expiring:sbi->lookup_lock']
	assert dead.uncalled
	assert mutate.site_notes(dead)[0].startswith('autofs_add_expiring() is static and nothing')
	# called from another function, or used through an ops table
	assert not sites['fs/autofs/root.c:autofs_lookup:sbi->lookup_lock'].uncalled
	assert not sites['fs/autofs/root.c:autofs_lookup_active:sbi->lookup_lock'].uncalled
	# not static: a caller may be anywhere
	assert not sites['fs/ufs/x.c:ufs_statfs:UFS_SB(sb)->s_lock'].uncalled
	listed = mutate.format_list(list(sites.values()), [], [])
	assert 'autofs_add_expiring:sbi->lookup_lock  [spinlock, lines 10,12] (no caller)' in listed


def test_uses_count_bodies_and_initialisers_not_prototypes_or_recursion(tmp_path):
	d = tmp_path / 'fs' / 'ufs'
	d.mkdir(parents=True)
	(d / 'a.c').write_text(
		'static int rec(int n);\n'
		'static int rec(int n)\n{\n\tmutex_lock(&m);\n\tmutex_unlock(&m);\n'
		'\treturn n ? rec(n - 1) : 0;\n}\n'
		'static int used(void)\n{\n\tspin_lock(&l);\n\tspin_unlock(&l);\n\treturn 0;\n}\n'
		'static const struct ops o = {\n\t.f = used,\n};\n')
	sites, _, problems = mutsites.discover(tmp_path, ['ufs'])
	assert problems == []
	assert {s.function: s.uncalled for s in sites} == {'rec': True, 'used': False}


def test_no_site_is_uncalled_when_a_file_could_not_be_read(tmp_path):
	d = tmp_path / 'fs' / 'ufs'
	d.mkdir(parents=True)
	(d / 'a.c').write_text('static void f(void)\n{\n\tmutex_lock(&m);\n\tmutex_unlock(&m);\n}\n')
	(d / 'b.c').write_text('void g(void)\n{\n\tf();\n')
	sites, _, problems = mutsites.discover(tmp_path, ['ufs'])
	assert len(problems) == 1 and [s.uncalled for s in sites] == [False]


def test_comments_strings_macros_and_tests_are_not_sites(ktree):
	sites, unpaired = sites_by_id(ktree, ['autofs'])
	lines = {(s.file, n) for s in list(sites.values()) + list(unpaired.values()) for n in s.lines}
	# line 2: a comment, 7: a #define, 9: a string
	assert not any(f == 'fs/autofs/root.c' and n in (2, 7, 9) for f, n in lines)
	assert not any('tests/' in f for f, _ in lines)


def test_one_subsystem_only(ktree):
	sites, _ = sites_by_id(ktree, ['appletalk'])
	assert {s.subsystem for s in sites.values()} == {'appletalk'}


def test_functions_skip_prototypes_and_initialisers():
	text = ('int f(int a);\nstatic const struct ops o = {\n\t.f = f,\n};\n'
		'struct s {\n\tint a;\n};\nint f(int a)\n{\n\tif (a) {\n\t\t{ a++; }\n\t}\n'
		'\treturn a;\n}\nint g(void) { return 0; }\n')
	fs = mutsites.functions(mutsites.mask(text))
	assert [(f.name, f.line) for f in fs] == [('f', 8), ('g', 15)]


def test_unbalanced_braces_are_a_problem_not_a_crash(tmp_path):
	(tmp_path / 'fs' / 'ufs').mkdir(parents=True)
	(tmp_path / 'fs' / 'ufs' / 'bad.c').write_text('int f(void)\n{\n\tif (x) {\n')
	sites, unpaired, problems = mutsites.discover(tmp_path, ['ufs'])
	assert sites == [] and len(problems) == 1 and problems[0].startswith('fs/ufs/bad.c: ')


def test_select_substring_and_glob(ktree):
	sites, _, _ = mutsites.discover(ktree, ['autofs'])
	assert [s.id for s in mutsites.select(sites, ['autofs_wait:sbi->fs'])] == [
		'fs/autofs/root.c:autofs_wait:sbi->fs_lock']
	got = mutsites.select(sites, ['*:autofs_lookup*:sbi->lookup_lock'])
	assert [s.function for s in got] == ['autofs_lookup', 'autofs_lookup_active']
	assert mutsites.select(sites, ['nothing']) == []
	assert len(mutsites.select(sites, [])) == len(sites)


# ------------------------------------------------------------------ the mutant


def mutant_of(ktree, site_id):
	sites, _ = sites_by_id(ktree)
	s = sites[site_id]
	text = (ktree / s.file).read_text()
	new = mutsites.mutate_text(text, s)
	assert new.count('\n') == text.count('\n')
	old_lines, new_lines = text.split('\n'), new.split('\n')
	return {n: (a, b) for n, (a, b) in enumerate(zip(old_lines, new_lines), 1) if a != b}


def test_mutant_takes_the_lock_and_every_unlock_and_nothing_else(ktree):
	diff = mutant_of(ktree, 'fs/autofs/root.c:autofs_lookup:sbi->lookup_lock')
	assert {n: b.strip() for n, (a, b) in diff.items()} == {
		15: '(void)(&sbi->lookup_lock);', 20: '(void)(&sbi->lookup_lock);',
		25: '(void)(&sbi->lookup_lock);'}


def test_mutant_of_a_function_whose_name_another_starts_with(ktree):
	diff = mutant_of(ktree, 'fs/autofs/root.c:autofs_lookup_active:sbi->lookup_lock')
	assert sorted(diff) == [33, 35]


def test_mutant_values_irq_bh_sock_rtnl_and_capabilities(ktree):
	diff = mutant_of(ktree, 'fs/autofs/root.c:autofs_wait:sbi->wq_mutex')
	assert diff[47][1].strip() == 'if (((void)(&sbi->wq_mutex), 0))'
	assert diff[50][1].strip() == '(void)(&sbi->wq_mutex);'
	diff = mutant_of(ktree, 'fs/ufs/x.c:ufs_statfs:sb->s_inode_list_lock')
	assert [b.strip() for _, b in diff.values()] == [
		'do { (void)(&sb->s_inode_list_lock); local_irq_save(flags); } while (0);',
		'do { (void)(&sb->s_inode_list_lock); local_irq_restore(flags); } while (0);']
	diff = mutant_of(ktree, 'net/appletalk/ddp.c:atalk_bind:atalk_sockets_lock')
	assert [b.strip() for _, b in diff.values()] == [
		'do { (void)(&atalk_sockets_lock); local_bh_disable(); } while (0);',
		'do { (void)(&atalk_sockets_lock); local_bh_enable(); } while (0);']
	diff = mutant_of(ktree, 'net/appletalk/ddp.c:atalk_bind:sk')
	assert [b.strip() for _, b in diff.values()] == ['(void)(sk);', '(void)(sk);']
	diff = mutant_of(ktree, 'net/appletalk/ddp.c:atalk_ioctl:rtnl')
	assert [b.strip() for _, b in diff.values()] == ['(void)0;', '(void)0;']
	diff = mutant_of(ktree, 'fs/autofs/root.c:autofs_ioctl:CAP_SYS_ADMIN')
	# a call over three lines keeps the line count
	assert diff == {63: ('\tif (cmd == 1 && !capable(CAP_SYS_ADMIN))', '\tif (cmd == 1 && !(1))'),
			66: ('\t    !ns_capable(current_user_ns(),',
			     '\t    !((void)(current_user_ns()), 1)'),
			67: ('\t\t\tCAP_SYS_ADMIN))', ')')}


def test_mutant_of_a_hand_over_leaves_nothing_unbalanced(ktree):
	diff = mutant_of(ktree, 'fs/autofs/root.c:walk:p->d_lock+parent->d_lock')
	assert [b.strip() for _, b in diff.values()] == [
		'(void)(&p->d_lock);', '(void)(&parent->d_lock);', '(void)(&p->d_lock);']


def test_mutant_of_a_file_changed_since_is_refused(ktree):
	sites, _ = sites_by_id(ktree)
	s = sites['fs/ufs/x.c:ufs_statfs:UFS_SB(sb)->s_lock']
	with pytest.raises(ValueError):
		mutsites.mutate_text('/* shifted */\n' + (ktree / s.file).read_text(), s)


# ------------------------------------------------------------------ the journal


def one_site(ktree, site_id='fs/ufs/x.c:ufs_statfs:UFS_SB(sb)->s_lock'):
	return sites_by_id(ktree)[0][site_id]


def test_file_mutated_inside_and_put_back_after(ktree, tmp_path):
	s = one_site(ktree)
	f = ktree / s.file
	before = f.read_bytes()
	with mutate.mutated(ktree, s) as changed:
		assert changed == [10, 21]
		assert f.read_bytes() != before
		j = json.loads(mutate.journal_path(ktree).read_text())
		assert j['file'] == s.file and j['site'] == s.id
	assert f.read_bytes() == before
	assert not mutate.journal_path(ktree).exists()
	assert list(f.parent.glob('*.tmp')) == []


@pytest.mark.parametrize('exc', [KeyboardInterrupt, SystemExit, RuntimeError])
def test_file_put_back_on_interrupt(ktree, tmp_path, exc):
	s = one_site(ktree)
	before = (ktree / s.file).read_bytes()
	with pytest.raises(exc):
		with mutate.mutated(ktree, s):
			raise exc()
	assert (ktree / s.file).read_bytes() == before
	assert not mutate.journal_path(ktree).exists()


def killed_inside(ktree, s):
	"""A mutate killed outright (SIGKILL) while the file was mutated: the
	context is entered and never left."""
	mutate.apply(ktree, s)


def test_journal_puts_back_what_a_killed_run_left(ktree, tmp_path):
	s = one_site(ktree)
	before = (ktree / s.file).read_bytes()
	killed_inside(ktree, s)
	assert (ktree / s.file).read_bytes() != before
	done = mutate.recover(ktree)
	assert 'put back fs/ufs/x.c' in done
	assert (ktree / s.file).read_bytes() == before
	assert not mutate.journal_path(ktree).exists()
	assert mutate.recover(ktree) == ''


def test_journal_of_a_file_already_put_back(ktree, tmp_path):
	s = one_site(ktree)
	before = (ktree / s.file).read_bytes()
	killed_inside(ktree, s)
	(ktree / s.file).write_bytes(before)
	assert 'already' in mutate.recover(ktree)
	assert not mutate.journal_path(ktree).exists()


def test_journal_refuses_a_file_changed_since(ktree, tmp_path):
	s = one_site(ktree)
	killed_inside(ktree, s)
	(ktree / s.file).write_text('someone else\'s edit\n')
	with pytest.raises(UserError, match='changed since'):
		mutate.recover(ktree)
	assert (ktree / s.file).read_text() == 'someone else\'s edit\n'
	assert mutate.journal_path(ktree).exists()


def test_journal_not_json_is_a_user_error(tmp_path):
	mutate.journal_path(tmp_path).parent.mkdir(parents=True)
	mutate.journal_path(tmp_path).write_text('{')
	with pytest.raises(UserError, match='cannot be read'):
		mutate.recover(tmp_path)


def test_run_refuses_a_tree_an_interrupted_mutate_left(ktree):
	(ktree / '.git').mkdir()
	tree.refuse_mutated(ktree)
	mutate.apply(ktree, one_site(ktree))
	with pytest.raises(UserError, match='interrupted `kunit.py mutate`'):
		tree.refuse_mutated(ktree)
	mutate.recover(ktree)
	tree.refuse_mutated(ktree)


def test_sigterm_inside_puts_the_file_back(ktree, tmp_path):
	"""SIGTERM as cli.main turns it into SystemExit."""
	s = one_site(ktree)
	before = (ktree / s.file).read_bytes()
	old = signal.signal(signal.SIGTERM, cli._terminated)
	try:
		with pytest.raises(SystemExit):
			with mutate.mutated(ktree, s):
				signal.raise_signal(signal.SIGTERM)
	finally:
		signal.signal(signal.SIGTERM, old)
	assert (ktree / s.file).read_bytes() == before


# ------------------------------------------------------------------ verdicts


def case(row, status):
	suite, _, name = row.partition('.')
	return Case(suite, name, status=status)


BASE = {r: case(r, st) for r, st in [('s.a', Outcome.PASS), ('s.b', Outcome.PASS),
				     ('s.c', Outcome.FAIL), ('s.d', Outcome.SKIP)]}


def test_verdict_killed_by_a_case_that_passed():
	m = dict(BASE, **{'s.b': case('s.b', Outcome.FAIL)})
	v, killers = mutate.judge(BASE, m, ArchStatus.FAIL)
	assert v == mutate.Verdict.KILLED and killers == ['s.b: PASS -> FAIL (not ok)']


def test_verdict_names_the_message_not_only_where_it_failed():
	c = case('s.b', Outcome.FAIL)
	c.diagnostics = ['    # s: EXPECTATION FAILED at fs/autofs/tests/excl_kunit.c:792',
			 'autofs_del_expiring returned while the case held lookup_lock']
	v, killers = mutate.judge(BASE, dict(BASE, **{'s.b': c}), ArchStatus.FAIL)
	assert killers == ['s.b: PASS -> FAIL (autofs_del_expiring returned while the case held '
			   'lookup_lock)']


def test_verdict_gives_the_values_and_the_message_of_a_failed_expectation():
	c = case('s.b', Outcome.FAIL)
	c.diagnostics = ['    # s: EXPECTATION FAILED at fs/ufs/tests/rw_kunit.c:511',
			 '    Expected err == -28, but', '        err == 0 (0x0)', '',
			 'a task without CAP_SYS_RESOURCE wrote into the reserved space',
			 '    # s: EXPECTATION FAILED at fs/ufs/tests/rw_kunit.c:513',
			 '    Expected free == 1, but']
	v, killers = mutate.judge(BASE, dict(BASE, **{'s.b': c}), ArchStatus.FAIL)
	assert killers == ['s.b: PASS -> FAIL (Expected err == -28, but err == 0 (0x0) a task '
			   'without CAP_SYS_RESOURCE wrote into the reserved space)']


def test_verdict_survived_when_only_failing_cases_fail():
	m = dict(BASE, **{'s.d': case('s.d', Outcome.FAIL)})
	assert mutate.judge(BASE, m, ArchStatus.FAIL) == (mutate.Verdict.SURVIVED, [])
	assert mutate.judge(BASE, dict(BASE), ArchStatus.PASS) == (mutate.Verdict.SURVIVED, [])


def test_verdict_crash_and_missing_cases_kill():
	m = {'s.a': case('s.a', Outcome.ERROR)}
	v, killers = mutate.judge(BASE, m, ArchStatus.CRASH, 'Kernel panic')
	assert v == mutate.Verdict.KILLED
	assert killers == ['s.a: PASS -> ERROR (no result)', 's.b: PASS -> missing']
	v, killers = mutate.judge(BASE, dict(BASE), ArchStatus.TIMEOUT, 'guest killed\nmore')
	assert (v, killers) == (mutate.Verdict.KILLED, ['TIMEOUT: guest killed'])


def test_verdict_build_failed_and_error():
	assert mutate.judge(BASE, {}, ArchStatus.BUILD_FAILED)[0] == mutate.Verdict.BUILD_FAILED
	assert mutate.judge(BASE, {}, ArchStatus.CONFIG_FAILED)[0] == mutate.Verdict.BUILD_FAILED
	assert mutate.judge(BASE, {}, ArchStatus.ERROR)[0] == mutate.Verdict.ERROR


def test_verdict_from_recorded_consoles(parser_tree, tmp_path):
	"""The per-case results as run reads them from a console: autofs_test_no_pipe
	passed in console_pass.log and fails in console_fail.log."""
	data = Path(__file__).resolve().parent / 'data'
	outs = {}
	for name, status in (('console_pass.log', ArchStatus.PASS),
			     ('console_fail.log', ArchStatus.FAIL)):
		d = tmp_path / name
		d.mkdir()
		shutil.copyfile(data / name, d / 'console.log')
		outs[name] = mutate.case_outcomes(parser_tree, ArchResult('x86_64', status), d)
	v, killers = mutate.judge(outs['console_pass.log'], outs['console_fail.log'], ArchStatus.FAIL)
	assert v == mutate.Verdict.KILLED
	assert [k.split(':')[0] for k in killers] == ['autofs_protocol.autofs_test_no_pipe']
	assert mutate.judge(outs['console_pass.log'], outs['console_pass.log'],
			    ArchStatus.PASS)[0] == mutate.Verdict.SURVIVED


def test_verdict_from_a_real_mutant(parser_tree, tmp_path):
	"""Recorded x86_64 consoles (2026-12-07): the autofs suites unmutated
	(70 cases pass) and with lookup_lock taken out of autofs_del_expiring()."""
	data = Path(__file__).resolve().parent / 'data' / 'mutate'
	outs = []
	for name, status in (('autofs_unmutated.log', ArchStatus.PASS),
			     ('autofs_del_expiring_mutant.log', ArchStatus.FAIL)):
		d = tmp_path / name
		d.mkdir()
		shutil.copyfile(data / name, d / 'console.log')
		outs.append(mutate.case_outcomes(parser_tree, ArchResult('x86_64', status), d))
	assert sum(c.status == Outcome.PASS for c in outs[0].values()) == 70
	v, killers = mutate.judge(outs[0], outs[1], ArchStatus.FAIL)
	assert v == mutate.Verdict.KILLED
	assert killers == ['autofs_excl.autofs_excl/lookup_lock autofs_del_expiring: PASS -> FAIL '
			   '(autofs_del_expiring returned while the case held lookup_lock: it does '
			   'not take it)']


def test_an_unbalanced_unlock_is_noted(tmp_path):
	(tmp_path / 'console.log').write_text('[ 1.5] WARNING: bad unlock balance detected!\n')
	assert 'unbalanced unlock' in mutate.console_notes(tmp_path)[0]
	(tmp_path / 'console.log').write_text('[ 1.5] all fine\n')
	assert mutate.console_notes(tmp_path) == []
	assert mutate.console_notes(tmp_path / 'nothing') == []


def test_report_judges_a_results_directory_again(parser_tree, tmp_path, capsys):
	data = Path(__file__).resolve().parent / 'data' / 'mutate'
	rdir = tmp_path / 'r'
	for name, where in (('autofs_unmutated.log', 'baseline/autofs/x86_64'),
			    ('autofs_del_expiring_mutant.log', 'sites/001-x/x86_64'),
			    ('autofs_unmutated.log', 'sites/002-y/x86_64')):
		(rdir / where).mkdir(parents=True)
		shutil.copyfile(data / name, rdir / where / 'console.log')
	rows = [dict(r, verdict='NOT_RUN', killed_by=[], arch_status='FAIL' if n == 0 else 'PASS',
		     notes=[], wall_seconds=30.0, started='')
		for n, r in enumerate(SITE_ROWS)]
	rows[0]['results'], rows[1]['results'] = 'sites/001-x/x86_64', 'sites/002-y/x86_64'
	doc = doc_with(rows)
	doc['tree'] = str(parser_tree)
	mutate.write_json(rdir, doc)
	assert cli.main(['mutate', '--report', str(rdir)]) == 1       # a survivor
	got = json.loads((rdir / 'mutate.json').read_text())
	assert [s['verdict'] for s in got['sites']] == ['KILLED', 'SURVIVED']
	assert got['sites'][0]['killed_by'][0].startswith(
		'autofs_excl.autofs_excl/lookup_lock autofs_del_expiring: PASS -> FAIL')
	assert got['counts']['KILLED'] == 1
	assert (rdir / 'mutate.html').is_file()
	assert 'SURVIVED     fs/autofs/expire.c:autofs_expire_run' in capsys.readouterr().out


def test_report_of_no_mutate_directory(tmp_path, capsys):
	assert cli.main(['mutate', '--report', str(tmp_path)]) == 2
	assert 'not found' in one_line_error(capsys)
	(tmp_path / 'mutate.json').write_text('[]')
	assert cli.main(['mutate', '--report', str(tmp_path)]) == 2
	assert 'not a mutate.json' in one_line_error(capsys)


# ------------------------------------------------------------------ writing


def doc_with(sites):
	return {'kernel_version': '6.12.118', 'arch': 'x86_64', 'profile': 'default',
		'tree': '/t', 'baseline': {'autofs': {'status': 'PASS', 'passed': 70, 'cases': 70,
						      'build_seconds': 1, 'run_seconds': 4,
						      'results': 'baseline/autofs/x86_64'}},
		'sites': sites, 'counts': {'KILLED': 1, 'SURVIVED': 1},
		'unpaired': ['fs/autofs/waitq.c:autofs_notify_daemon:sbi->wq_mutex']}


SITE_ROWS = [
	dict(id='fs/autofs/root.c:autofs_lookup:sbi->lookup_lock', subsystem='autofs',
	     file='fs/autofs/root.c', function='autofs_lookup', line=511, lock='sbi->lookup_lock',
	     kind='spinlock', calls=2, lines_changed=[530, 540], verdict='KILLED',
	     killed_by=['autofs_excl.autofs_excl/lookup_lock autofs_lookup: PASS -> FAIL (<x>)'],
	     build_seconds=20, run_seconds=4, results='sites/001-x/x86_64', reason=''),
	dict(id='fs/autofs/expire.c:autofs_expire_run:sbi->fs_lock', subsystem='autofs',
	     file='fs/autofs/expire.c', function='autofs_expire_run', line=550, lock='sbi->fs_lock',
	     kind='spinlock', calls=2, lines_changed=[562, 568], verdict='SURVIVED', killed_by=[],
	     build_seconds=24, run_seconds=3, results='sites/002-y/x86_64', reason='')]


def test_json_and_html_written_atomically(tmp_path):
	doc = doc_with(SITE_ROWS)
	p = mutate.write_json(tmp_path, doc)
	assert json.loads(p.read_text()) == doc
	h = mutate.write_html(tmp_path, doc).read_text()
	assert 'data-verdict="KILLED"' in h and 'data-verdict="SURVIVED"' in h
	assert '&lt;x&gt;' in h and '<x>' not in h
	assert 'autofs_notify_daemon' in h
	assert sorted(x.name for x in tmp_path.iterdir()) == ['mutate.html', 'mutate.json']


def test_html_linked_from_index_once(tmp_path):
	(tmp_path / 'index.html').write_text('<html><body><h1>run</h1>\n</body></html>\n')
	mutate.write_html(tmp_path, doc_with(SITE_ROWS))
	mutate.write_html(tmp_path, doc_with(SITE_ROWS))
	assert (tmp_path / 'index.html').read_text().count('href="mutate.html"') == 1


# ------------------------------------------------------------------ options


def one_line_error(capsys) -> str:
	err = capsys.readouterr().err
	assert 'Traceback' not in err, err
	lines = err.strip().splitlines()
	assert len(lines) == 1 and lines[0].startswith('kunit.py mutate: error: '), err
	return lines[0]


@pytest.mark.parametrize('argv, said', [
	(['--arch=um'], '--arch takes one of'),
	(['--arch=x86_64,arm'], '--arch takes one of'),
	(['--arch=sparc'], "unknown arch 'sparc'"),
	(['--profile=kasan'], 'lock removal runs in default or kcsan'),
	(['--profile=nosuch'], 'lock removal runs in default or kcsan'),
	(['--profile=kcsan', '--arch=arm'], 'no KCSAN on 32-bit arm'),
	(['--subsystem=ext4'], "unknown subsystem 'ext4'"),
	(['--subsystem=,'], 'no subsystem given'),
	(['--site='], 'an empty filter'),
])
def test_bad_options_one_line_exit_2_nothing_written(argv, said, tmp_path, capsys):
	cache = tmp_path / 'c'
	rc = cli.main(['mutate', '--cache-dir', str(cache), '--no-install'] + argv)
	assert rc == 2
	assert said in one_line_error(capsys)
	assert not cache.exists()


@pytest.mark.parametrize('option', ['--jobs=0', '--timeout=0', '--timeout=x'])
def test_bad_numbers_refused_by_the_parser(option, tmp_path, capsys):
	with pytest.raises(SystemExit) as e:
		cli.main(['mutate', '--cache-dir', str(tmp_path / 'c'), option])
	assert e.value.code == 2
	assert 'Traceback' not in capsys.readouterr().err
	assert not (tmp_path / 'c').exists()


def test_subsystems_comma_list_in_a_stable_order(tmp_path):
	args = cli.build_parser().parse_args(['mutate', '--subsystem', 'autofs,ufs',
					      '--subsystem', 'ufs', '--list'])
	o = mutate.MutateOptions.from_args(args, tmp_path)
	assert o.subsystems == ('ufs', 'autofs') and o.arch == 'x86_64'


# ------------------------------------------------------------------ a whole run


@pytest.fixture
def gitree(ktree):
	"""The data tree as a git repository with one commit, as prepare leaves one."""
	env = tree.git_env({'GIT_AUTHOR_NAME': 't', 'GIT_AUTHOR_EMAIL': 't@localhost'})
	for cmd in (['init', '-q', '-b', 'work'], ['add', '-f', '-A', '.'],
		    ['commit', '-q', '-m', 'data']):
		subprocess.run(['git', '-C', str(ktree)] + cmd, check=True, env=env,
			       capture_output=True)
	return ktree


def fake_run_arch(seen, outcome):
	"""runner.run_arch as mutate calls it: records the mutated file's lines
	while it 'builds', writes a console of one passing or failing case."""
	def run_arch(ktree, arch, build_dir, out, options, cache, fragments=None, tag=''):
		out.mkdir(parents=True, exist_ok=True)
		st = subprocess.run(['git', '-C', str(ktree), 'status', '--porcelain'],
				    capture_output=True, text=True).stdout
		seen.append((options.filter_glob, options.always_build, options.attr_filter, st.strip()))
		ok = outcome(st)
		res = ArchResult(arch, status=ArchStatus.PASS if ok else ArchStatus.FAIL)
		(out / 'console.log').write_text('')
		res.build_seconds, res.run_seconds = 20.0, 4.0
		return res
	return run_arch


def test_whole_run_on_a_small_tree(gitree, tmp_path, monkeypatch, capsys):
	cache = tmp_path / 'cache'
	seen = []
	monkeypatch.setattr(runner, 'run_arch', fake_run_arch(seen, lambda st: 'root.c' not in st))

	def outcomes(ktree, res, adir):
		ok = res.status == ArchStatus.PASS
		return {'autofs_x.a': Case('autofs_x', 'a', status=Outcome.PASS if ok else Outcome.FAIL)}
	monkeypatch.setattr(mutate, 'case_outcomes', outcomes)
	args = cli.build_parser().parse_args(['mutate', '--subsystem', 'autofs', '--site', 'root.c:autofs_l',
					      '--site', 'autofs_i.h', '--results-dir',
					      str(tmp_path / 'r'), '--ccache-dir', str(tmp_path / 'cc')])
	o = mutate.MutateOptions.from_args(args, cache)
	prep = tree.Prepared(gitree, '6.12.118-1~deb12u1', '6.12.118', 'p', 'h', [], False)
	rc = mutate._mutate(o, cache, prep)
	assert rc == 0       # every site killed, or uncalled
	doc = json.loads((tmp_path / 'r' / 'mutate.json').read_text())
	got = {s['id']: s['verdict'] for s in doc['sites']}
	assert got == {'fs/autofs/autofs_i.h:autofs_add_expiring:sbi->lookup_lock': 'UNCALLED',
		       'fs/autofs/root.c:autofs_lookup:sbi->lookup_lock': 'KILLED',
		       'fs/autofs/root.c:autofs_lookup:dentry->d_lock': 'KILLED',
		       'fs/autofs/root.c:autofs_lookup_active:sbi->lookup_lock': 'KILLED'}
	assert doc['counts']['KILLED'] == 3 and doc['counts']['UNCALLED'] == 1
	assert doc['sites_found'] == {'autofs': 8}
	# the baseline on the clean tree, then one mutated file at a time, always rebuilt
	assert seen[0] == ('autofs_*', False, 'speed>slow', '')
	# the uncalled site is not built
	assert [s[3] for s in seen[1:]] == ['M fs/autofs/root.c'] * 3
	assert all(s[1] for s in seen[1:])
	assert subprocess.run(['git', '-C', str(gitree), 'status', '--porcelain'],
			      capture_output=True, text=True).stdout == ''
	assert not mutate.journal_path(gitree).exists()
	assert (tmp_path / 'r' / 'mutate.html').is_file()


def test_interrupted_run_leaves_the_tree_clean(gitree, tmp_path, monkeypatch):
	cache = tmp_path / 'cache'
	calls = []

	def run_arch(ktree, arch, build_dir, out, options, cache, fragments=None, tag=''):
		calls.append(options.filter_glob)
		if len(calls) == 2:
			raise KeyboardInterrupt
		out.mkdir(parents=True, exist_ok=True)
		return ArchResult(arch, status=ArchStatus.PASS)
	monkeypatch.setattr(runner, 'run_arch', run_arch)
	monkeypatch.setattr(mutate, 'case_outcomes', lambda k, r, a: {
		'ufs_x.a': Case('ufs_x', 'a', status=Outcome.PASS)})
	args = cli.build_parser().parse_args(['mutate', '--subsystem', 'ufs', '--results-dir',
					      str(tmp_path / 'r')])
	o = mutate.MutateOptions.from_args(args, cache)
	prep = tree.Prepared(gitree, 'd', 'u', 'p', 'h', [], False)
	with pytest.raises(KeyboardInterrupt):
		mutate._mutate(o, cache, prep)
	assert subprocess.run(['git', '-C', str(gitree), 'status', '--porcelain'],
			      capture_output=True, text=True).stdout == ''
	doc = json.loads((tmp_path / 'r' / 'mutate.json').read_text())
	assert {s['verdict'] for s in doc['sites']} == {'NOT_RUN'} and doc['finished']


def test_a_dirty_tree_is_refused(gitree, tmp_path, monkeypatch, capsys):
	cache = tmp_path / 'cache'
	(gitree / 'fs' / 'ufs' / 'x.c').write_text('an edit\n')
	monkeypatch.setattr(tree, 'tree_path', lambda c, d: gitree)
	monkeypatch.setattr(tree, 'prepare', lambda *a, **k: tree.Prepared(
		gitree, 'd', 'u', 'p', tree.head(gitree), [], False))
	monkeypatch.setattr(mutate.deps, 'ensure', lambda *a, **k: None)
	rc = cli.main(['mutate', '--cache-dir', str(cache), '--results-dir', str(tmp_path / 'r')])
	assert rc == 2
	assert 'has uncommitted changes' in capsys.readouterr().err
	assert not (tmp_path / 'r').exists()


def test_a_journaled_mutation_is_put_back_first(gitree, tmp_path, monkeypatch, capsys):
	cache = tmp_path / 'cache'
	killed_inside(gitree, one_site(gitree))
	monkeypatch.setattr(tree, 'tree_path', lambda c, d: gitree)
	monkeypatch.setattr(tree, 'find_prepared', lambda c: gitree)
	rc = cli.main(['mutate', '--cache-dir', str(cache), '--list', '--subsystem', 'ufs'])
	assert rc == 0
	out = capsys.readouterr().out
	assert 'put back fs/ufs/x.c' in out
	assert 'ufs: 3 site(s), suites ufs_*' in out
	assert subprocess.run(['git', '-C', str(gitree), 'status', '--porcelain'],
			      capture_output=True, text=True).stdout == ''


def test_journal_and_results_of_a_newer_version_are_refused(ktree, tmp_path):
	s = one_site(ktree)
	before = (ktree / s.file).read_bytes()
	killed_inside(ktree, s)
	jp = mutate.journal_path(ktree)
	j = json.loads(jp.read_text())
	jp.write_text(json.dumps(dict(j, version=mutate.JOURNAL_VERSION + 1)))
	with pytest.raises(UserError, match='not a mutate journal of version 1'):
		mutate.recover(ktree)
	assert jp.exists() and (ktree / s.file).read_bytes() != before     # left as it was
	rdir = tmp_path / 'r'
	rdir.mkdir()
	(rdir / 'mutate.json').write_text(json.dumps({'version': 2, 'tree': str(ktree), 'sites': [],
						      'baseline': {}}))
	with pytest.raises(UserError, match=r'mutate.json: version 2, not one this kunit.py reads'):
		mutate.report(rdir)
