# SPDX-License-Identifier: GPL-2.0
"""The project itself (issue #17, item 11): no absolute path of one
machine anywhere in it, and the KCIDB schema the report tests validate
against is found beside the repository or through an environment
variable, never at a fixed absolute path."""

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

import test_report
from bklkunit.base import paths


def project_files():
	"""The files of the repository (git's list; every file when not a checkout)."""
	proc = subprocess.run(['git', '-C', str(paths.REPO), 'ls-files', '-z'],
			      capture_output=True, text=True)
	if proc.returncode == 0 and proc.stdout:
		names = [n for n in proc.stdout.split('\0') if n]
		return [paths.REPO / n for n in names if (paths.REPO / n).is_file()]
	return [p for p in paths.REPO.rglob('*') if p.is_file() and '.git' not in p.parts]


# Directories every machine has: a file naming /tmp/x says nothing about
# where this checkout is, so a clone under one of them (make test in
# /tmp/clone) must not turn every /tmp/... in a test into a finding.
SHARED_DIRS = {Path('/tmp'), Path('/var/tmp'), Path(tempfile.gettempdir()), Path('/home')}


def machine_paths():
	"""Where this checkout (and the directory it sits in, unless that is a
	directory every machine has) and this user's home happen to be."""
	out = []
	for p in (paths.REPO, paths.REPO.parent, Path.home()):
		if p != Path(p.anchor) and p not in SHARED_DIRS:
			out.append(str(p).rstrip('/') + '/')
	return out


def test_no_absolute_machine_path_in_the_project():
	found = []
	needles = machine_paths()
	for f in project_files():
		try:
			text = f.read_text(errors='replace')
		except OSError:
			continue
		for n, line in enumerate(text.splitlines(), 1):
			if any(needle in line for needle in needles):
				found.append(f'{f.relative_to(paths.REPO)}:{n}: {line.strip()[:100]}')
	assert found == [], '\n'.join(found)


def test_the_schema_is_looked_for_beside_the_repository_and_by_variable(tmp_path):
	beside = test_report.schema_candidates({})
	assert beside == [paths.REPO.parent / 'shared' / 'kcidb' / 'kcidb-v5.3.schema.json']
	mine = tmp_path / 'kcidb.json'
	got = test_report.schema_candidates({test_report.SCHEMA_ENV: str(mine)})
	assert got[0] == mine and got[1:] == beside


def test_without_the_schema_the_tests_skip_saying_how(tmp_path, monkeypatch):
	monkeypatch.setenv(test_report.SCHEMA_ENV, str(tmp_path / 'nowhere.json'))
	monkeypatch.setattr(test_report, 'schema_candidates',
			    lambda env: [tmp_path / 'nowhere.json', tmp_path / 'shared.json'])
	with pytest.raises(pytest.skip.Exception) as ei:
		test_report.load_schema()
	reason = str(ei.value)
	assert test_report.SCHEMA_ENV in reason and 'shared/kcidb' in reason


def test_the_schema_variable_is_used(tmp_path, monkeypatch):
	mine = tmp_path / 'kcidb.json'
	mine.write_text('{"title": "mine"}')
	monkeypatch.setenv(test_report.SCHEMA_ENV, str(mine))
	assert test_report.load_schema() == {'title': 'mine'}
	assert os.environ[test_report.SCHEMA_ENV] == str(mine)
