"""A small parser with the flag rules of Go's pflag (kubectl, kubeadm,
etcdctl and crictl all use them): ``--a=b``, ``--a b``, ``-ab``,
``-a=b``, flags anywhere between positionals, ``--`` ends flags.
"""
from __future__ import annotations

from collections import namedtuple

# Plain shapes, not dataclasses: every kubeadm, etcdctl and crictl run
# parses its flags, and importing dataclasses doubles a command's start-up.
Flag = namedtuple('Flag', 'name value short multi',
                  defaults=(True, None, False))
Flag.__doc__ = """A flag: ``value`` - it takes a value (else it is a boolean
switch); ``short`` - its one-letter form; ``multi`` - it may repeat, its
values collected in a list."""


class FlagError(Exception):
    """Raised with pflag's own wording, e.g. ``unknown flag: --x``."""


class Parsed:
    """The flags' values by long name, and the positional arguments."""

    def __init__(self, values: dict[str, object] | None = None,
                 args: list[str] | None = None):
        self.values = values if values is not None else {}
        self.args = args if args is not None else []

    def __repr__(self) -> str:
        return f'Parsed(values={self.values!r}, args={self.args!r})'

    def get(self, name: str, default=None):
        return self.values.get(name, default)

    def has(self, name: str) -> bool:
        return name in self.values

    def list(self, name: str) -> list[str]:
        return list(self.values.get(name) or [])


def _bool(text: str, flag: str) -> bool:
    low = text.lower()
    if low in ('1', 't', 'true'):
        return True
    if low in ('0', 'f', 'false'):
        return False
    raise FlagError(f'invalid argument "{text}" for "--{flag}" flag: '
                    f'strconv.ParseBool: parsing "{text}": invalid syntax')


class _Parser:
    def __init__(self, flags: list[Flag], argv: list[str]):
        self.long = {f.name: f for f in flags}
        self.short = {f.short: f for f in flags if f.short}
        self.argv = argv
        self.pos = 0
        self.out = Parsed()

    def _store(self, flag: Flag, value: object) -> None:
        if flag.multi:
            self.out.values.setdefault(flag.name, []).append(value)
        else:
            self.out.values[flag.name] = value

    def _next_value(self, label: str) -> str:
        if self.pos >= len(self.argv):
            raise FlagError(f'flag needs an argument: {label}')
        value = self.argv[self.pos]
        self.pos += 1
        return value

    def _long(self, arg: str) -> None:
        name, eq, value = arg[2:].partition('=')
        flag = self.long.get(name)
        if flag is None:
            raise FlagError(f'unknown flag: --{name}')
        if not flag.value:
            self._store(flag, _bool(value, name) if eq else True)
        else:
            self._store(flag, value if eq else
                        self._next_value(f'--{name}'))

    def _shorts(self, arg: str) -> None:
        chars = arg[1:]
        for i, char in enumerate(chars):
            flag = self.short.get(char)
            if flag is None:
                raise FlagError(
                    f"unknown shorthand flag: '{char}' in {arg}")
            rest = chars[i + 1:]
            if not flag.value:
                if rest.startswith('='):
                    self._store(flag, _bool(rest[1:], flag.name))
                    return
                self._store(flag, True)
                continue
            if rest:
                self._store(flag, rest[1:] if rest[0] == '=' else rest)
            else:
                self._store(flag, self._next_value(
                    f"'{char}' in {arg}"))
            return

    def run(self) -> Parsed:
        while self.pos < len(self.argv):
            arg = self.argv[self.pos]
            self.pos += 1
            if arg == '--':
                self.out.args.extend(self.argv[self.pos:])
                break
            if arg.startswith('--'):
                self._long(arg)
            elif arg.startswith('-') and arg != '-':
                self._shorts(arg)
            else:
                self.out.args.append(arg)
        return self.out


def parse(flags: list[Flag], argv: list[str]) -> Parsed:
    return _Parser(flags, list(argv)).run()


def first_positional(flags: list[Flag], argv: list[str]) -> int | None:
    """Index of the first positional argument, skipping values of the
    known value flags (used to find a sub-command among global flags).
    """
    long = {f.name: f for f in flags}
    short = {f.short: f for f in flags if f.short}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == '--':
            return i + 1 if i + 1 < len(argv) else None
        if arg.startswith('--'):
            name, eq, _ = arg[2:].partition('=')
            flag = long.get(name)
            i += 2 if flag and flag.value and not eq else 1
        elif arg.startswith('-') and arg != '-':
            flag = short.get(arg[1:2])
            i += 2 if flag and flag.value and len(arg) == 2 else 1
        else:
            return i
    return None
