# SPDX-License-Identifier: GPL-2.0
"""check-series' `modules` check: the series head with KUnit and the
subsystems as modules.

`make tinyconfig`, then kunit/modules.config (and kunit/modules-<arch>.config
where an arch needs more) merged over it with the tree's own
scripts/kconfig/merge_config.sh -m, `make olddefconfig`, `make vmlinux
modules`.  It fails on any build error (a modpost ERROR, an undefined
symbol among them) and on any line of the fragment olddefconfig did not
keep: a setting that lost its value, or one of the series' suites
(*_KUNIT_TEST) listed there that did not end up enabled (as a module: its
KUNIT is m).  Every suite symbol the series defines must be named in the
fragment: listed, or as

  # built-in only: CONFIG_X: why          (never expected in this build)
  # pending: CONFIG_X                     (listed, not modular in the series
                                           yet: reported, not a failure, and
                                           a failure once it is enabled, so
                                           that the line goes)

The report says which suite symbols ended up enabled, as modules or built
in, and which did not.
"""

import enum
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..base import paths
from ..base.errors import UserError
from ..source import subsystems
from ..source.kconfig import OPTION_SET, OPTION_UNSET, config_values

FRAGMENT = 'modules.config'
PENDING_RE = re.compile(r'^#\s*pending:\s*(?P<syms>CONFIG_\w+(?:[\s,]+CONFIG_\w+)*)\s*$')
BUILTIN_RE = re.compile(r'^#\s*built-in only:\s*CONFIG_(?P<sym>\w+)\s*(?::\s*(?P<why>.*))?$')
MODPOST_ERROR_RE = re.compile(r'^ERROR: modpost: (?P<msg>.*)$')
MODPOST_WARNING_RE = re.compile(r'^WARNING: modpost: (?P<msg>.*)$')
BUILD_ERROR_RE = re.compile(r'^(?:[^\s:]+:\d+:(?:\d+:)? (?:fatal )?error: .*|make(?:\[\d+\])?: \*\*\* .*)$')


def fragments(arch: str) -> List[Path]:
	"""The fragments of an arch, in the order they are merged."""
	out = [paths.KUNIT_DIR / FRAGMENT]
	extra = paths.KUNIT_DIR / f'modules-{arch}.config'
	if extra.exists():
		out.append(extra)
	return out


class State(enum.StrEnum):
	"""What olddefconfig left of a symbol."""
	MODULE = 'm'
	BUILTIN = 'y'
	OFF = 'off'


@dataclass(frozen=True)
class Fragment:
	"""A modules fragment, read."""
	settings: Tuple[Tuple[str, str], ...]      # (symbol without CONFIG_, value), in order
	pending: Tuple[str, ...] = ()
	builtin_only: Tuple[Tuple[str, str], ...] = ()   # (symbol, why)

	def value(self, sym: str) -> Optional[str]:
		return dict(self.settings).get(sym)


def read_fragment(text: str, name: str = FRAGMENT) -> Fragment:
	"""A fragment's settings and marks; a UserError naming the line for
	anything else, a pending symbol not listed or a built-in only one that is."""
	settings: List[Tuple[str, str]] = []
	pending: List[str] = []
	builtin: List[Tuple[str, str]] = []
	for n, raw in enumerate(text.splitlines(), 1):
		line = raw.strip()
		m = OPTION_SET.match(line)
		u = OPTION_UNSET.match(line)
		p = PENDING_RE.match(line)
		b = BUILTIN_RE.match(line)
		if m:
			settings.append((m.group(1), m.group(2)))
		elif u:
			settings.append((u.group(1), 'n'))
		elif p:
			pending += [s[len('CONFIG_'):] for s in re.findall(r'CONFIG_\w+', p.group('syms'))]
		elif b:
			builtin.append((b.group('sym'), (b.group('why') or '').strip()))
		elif line.startswith('#') and not re.match(r'#\s*(pending|built-in only)\b', line) \
		     or not line:
			continue
		else:
			raise UserError(f'{name}:{n}: not a Kconfig fragment line nor a mark: {line!r}')
	listed = {s for s, _ in settings}
	for s in pending:
		if s not in listed:
			raise UserError(f'{name}: pending CONFIG_{s} is not listed (CONFIG_{s}=y)')
	for s, _ in builtin:
		if s in listed:
			raise UserError(f'{name}: CONFIG_{s} is both listed and built-in only')
	return Fragment(tuple(settings), tuple(pending), tuple(builtin))


def state(config: Dict[str, str], sym: str) -> State:
	v = config.get(sym, 'n')
	return State.MODULE if v == 'm' else State.BUILTIN if v == 'y' else State.OFF


@dataclass
class SymbolCheck:
	"""The fragment against the .config olddefconfig left."""
	lost: List[str] = field(default_factory=list)          # settings that did not keep their value
	enabled: List[Tuple[str, State]] = field(default_factory=list)   # listed suites, on
	missing: List[str] = field(default_factory=list)       # listed suites, off, not pending
	pending: List[str] = field(default_factory=list)       # listed suites, off, pending
	stale: List[str] = field(default_factory=list)         # pending, yet on
	builtin_only: List[Tuple[str, str, State]] = field(default_factory=list)
	unnamed: List[str] = field(default_factory=list)       # series suites the fragment says nothing of
	builtin_on: List[str] = field(default_factory=list)    # built-in only, yet on

	@property
	def ok(self) -> bool:
		return not (self.lost or self.missing or self.stale or self.unnamed or self.builtin_on)

	def problems(self, name: str = f'kunit/{FRAGMENT}') -> List[str]:
		"""One line per failure, the first the most telling."""
		out = [f'dropped by olddefconfig (its dependencies are not met): CONFIG_{s}=y'
		       for s in self.missing]
		out += self.lost
		out += [f'CONFIG_{s} is enabled now: remove its `# pending:` line from {name}'
			for s in self.stale]
		out += [f'CONFIG_{s} is enabled now: list it in {name} instead of `# built-in only`'
			for s in self.builtin_on]
		out += [f'{name} says nothing of CONFIG_{s}, a suite of the series: list it '
			f'(CONFIG_{s}=y), or mark it `# built-in only: CONFIG_{s}: why`'
			for s in self.unnamed]
		return out

	def lines(self) -> List[str]:
		"""What ended up enabled and what did not."""
		out = []
		if self.enabled:
			# =y: a bool suite built into its subsystem's module (or a
			# built-in subsystem); =m: a module of its own.
			out.append('suites enabled: ' + ', '.join(f'CONFIG_{s} (={st})'
								  for s, st in self.enabled))
		if self.missing:
			out.append('suites not enabled: ' + ', '.join(f'CONFIG_{s}' for s in self.missing))
		if self.pending:
			out.append(f'suites pending (not modular in the series yet, {len(self.pending)}): '
				   + ', '.join(f'CONFIG_{s}' for s in self.pending))
		for s, why, st in self.builtin_only:
			out.append(f'built-in only, {"not in this build" if st == State.OFF else st}: '
				   f'CONFIG_{s}' + (f' ({why})' if why else ''))
		return out


def compare(frag: Fragment, config: Dict[str, str], suites: Sequence[str]) -> SymbolCheck:
	"""frag against config (config_values of the .config olddefconfig
	left); suites: the *_KUNIT_TEST symbols the series defines."""
	r = SymbolCheck()
	series = set(suites)
	for sym, want in frag.settings:
		have = config.get(sym, 'n')
		st = state(config, sym)
		if sym in series:
			if want == 'n':
				r.lost.append(f'CONFIG_{sym} is a suite of the series: list it =y, not off')
			elif st != State.OFF:
				r.enabled.append((sym, st))
				if sym in frag.pending:
					r.stale.append(sym)
			elif sym in frag.pending:
				r.pending.append(sym)
			else:
				r.missing.append(sym)
		elif have != want and not (want == 'n' and sym not in config):
			r.lost.append(f'CONFIG_{sym}={want} asked, the .config has '
				      + (f'CONFIG_{sym}={have}' if sym in config and have != 'n'
					 else 'it off'))
	for sym, why in frag.builtin_only:
		st = state(config, sym)
		r.builtin_only.append((sym, why, st))
		if st != State.OFF:
			r.builtin_on.append(sym)
	named = {s for s, _ in frag.settings} | {s for s, _ in frag.builtin_only}
	r.unnamed = [s for s in suites if s not in named]
	return r


@dataclass
class BuildOutput:
	"""What `make vmlinux modules` printed."""
	errors: List[str] = field(default_factory=list)       # modpost ERRORs and build errors
	warnings: List[str] = field(default_factory=list)     # modpost WARNINGs

	@classmethod
	def of(cls, output: str) -> 'BuildOutput':
		r = cls()
		for line in output.splitlines():
			s = line.strip()
			if MODPOST_ERROR_RE.match(s) or BUILD_ERROR_RE.match(s):
				r.errors.append(s)
			elif MODPOST_WARNING_RE.match(s):
				r.warnings.append(s)
		return r


def modules_built(build_dir: Path) -> List[str]:
	"""The .ko files of a build, relative to it, sorted."""
	return sorted(str(p.relative_to(build_dir)) for p in build_dir.rglob('*.ko'))


@dataclass
class ModulesResult:
	"""One arch's modules check."""
	arch: str
	ok: bool
	detail: str
	seconds: float = 0.0


# make(build_dir, arch, targets, extra, log, srcdir, cwd) -> CompletedProcess:
# checkseries' make, with its ccache and build environment.
Make = Callable[..., subprocess.CompletedProcess]


def configure(make: Make, srcdir: Path, build_dir: Path, arch: str, log: Path,
	      frags: Sequence[Path], env: Dict[str, str]
	      ) -> Optional[Tuple[str, subprocess.CompletedProcess[str]]]:
	"""`make tinyconfig`, frags merged over it (merge_config.sh -m), `make
	olddefconfig`, in build_dir; None when all went well, else the step
	that failed and its process."""
	build_dir.mkdir(parents=True, exist_ok=True)
	proc = make(build_dir, arch, ['tinyconfig'], [], log, srcdir)
	if proc.returncode != 0:
		return ('make tinyconfig', proc)
	merge = [str(srcdir / 'scripts/kconfig/merge_config.sh'), '-m', '-O', str(build_dir),
		 str(build_dir / '.config')] + [str(f) for f in frags]
	proc = subprocess.run(merge, cwd=build_dir, capture_output=True, text=True, env=env)
	with open(log, 'a') as f:
		f.write('$ ' + shlex.join(merge) + '\n' + proc.stdout + proc.stderr)
	if proc.returncode != 0:
		return ('merge_config.sh', proc)
	proc = make(build_dir, arch, ['olddefconfig'], [], log, srcdir)
	if proc.returncode != 0:
		return ('make olddefconfig', proc)
	return None


def lean_fragment(arch: str) -> str:
	"""check-series' lean configuration (--build-config=lean) of an arch:
	the modules check's fragments with every module built in and every
	suite marked built-in only listed, so that tinyconfig plus it builds
	every suite of the series into vmlinux.  A UserError for a fragment
	that cannot be read."""
	lines = ['# check-series --build-config=lean: made from '
		 + ', '.join(f'kunit/{f.name}' for f in fragments(arch)) + ', m made y']
	for f in fragments(arch):
		frag = read_fragment(f.read_text(), f'kunit/{f.name}')
		for sym, val in frag.settings:
			lines.append(f'# CONFIG_{sym} is not set' if val == 'n'
				     else f'CONFIG_{sym}={"y" if val == "m" else val}')
		lines += [f'CONFIG_{sym}=y' for sym, _ in frag.builtin_only]
	return '\n'.join(lines) + '\n'


def not_built_in(config: Dict[str, str], suites: Sequence[str]) -> List[str]:
	"""The suites (symbols) a lean .config (config_values) does not build in."""
	return [s for s in suites if config.get(s) != 'y']


def check(make: Make, srcdir: Path, build_dir: Path, arch: str, log: Path,
	  suites: Sequence[str], env: Dict[str, str]) -> ModulesResult:
	"""Configure and build srcdir (the series head) in build_dir."""
	t0 = time.time()
	frags = fragments(arch)
	frag = read_fragment(frags[0].read_text(), f'kunit/{frags[0].name}')
	log.write_text('')

	def failed(what: str, proc: subprocess.CompletedProcess[str]) -> ModulesResult:
		tail = '\n'.join((proc.stdout + proc.stderr).splitlines()[-15:])
		return ModulesResult(arch, False, f'{what} failed; see {log}\n{tail}', time.time() - t0)

	bad = configure(make, srcdir, build_dir, arch, log, frags, env)
	if bad:
		return failed(*bad)
	config = config_values((build_dir / '.config').read_text(errors='replace'))
	for extra in frags[1:]:
		more = read_fragment(extra.read_text(), f'kunit/{extra.name}')
		frag = Fragment(frag.settings + more.settings, frag.pending + more.pending,
				frag.builtin_only + more.builtin_only)
	symbols = compare(frag, config, suites)
	proc = make(build_dir, arch, ['vmlinux', 'modules'], [], log, srcdir)
	built = BuildOutput.of(proc.stdout + proc.stderr)
	kos = modules_built(build_dir)
	problems = symbols.problems()
	if proc.returncode != 0:
		problems.insert(0, f'make vmlinux modules exited {proc.returncode}; see {log}')
		problems[1:1] = built.errors[:15] or (proc.stdout + proc.stderr).splitlines()[-10:]
	# Ours: the modules under a directory of the series' subsystems.
	dirs = tuple(d for ds in subsystems.SUBSYSTEMS.values() for d in ds if d.endswith('/'))
	ours = [k for k in kos if k.startswith(dirs)]
	summary = (f'{arch}: tinyconfig + {" + ".join("kunit/" + f.name for f in frags)}, '
		   f'KUNIT={config.get("KUNIT", "n")}: {len(kos)} modules ({", ".join(ours)}), '
		   f'{len(built.warnings)} modpost warning(s)')
	detail = '\n'.join(problems + [summary] + symbols.lines() + built.warnings[:10])
	return ModulesResult(arch, proc.returncode == 0 and symbols.ok, detail, time.time() - t0)
