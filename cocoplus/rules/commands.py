"""What a simple command does, as far as its words say: which program really runs, and which files it touches.

`effective(part)` strips what only wraps a program (`/bin/rm`, `\\rm`,
`command rm`, `exec rm`, `env FOO=1 rm`, `FOO=1 rm`, `sudo`, `nice`,
`timeout 5`, `nohup`, `xargs`, ...) and looks inside what runs another
command (`sh -c '...'`, `bash -lc`, `eval`, `env -S`, `find -exec ... ;`),
for the deny rules: each `Invocation` is one program with its arguments.

`touched(part, cwd)` lists the files a command names: the targets of its
redirections, and its arguments that are paths (`cp a .claude/x`, `--out=f`,
`of=f`), with globs expanded as the shell would; which of those it may write
(any program not known to only read) and which it reads.  Arguments whose
value is only known when the command runs (`"$D/x"`) are counted as unknown.

These are tripwires read off the words, not a sandbox: what a program does
with its input (an archive, a patch, a script it runs) is not seen.
Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import userfiles
from cocoplus.rules import Unavailable, paths, shell

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Iterator

# Wrappers: program -> (short options taking a value, long options taking a value, positional words to skip).
WRAPPERS: dict[str, tuple[str, tuple[str, ...], int]] = {
    "command": ("", (), 0),
    "builtin": ("", (), 0),
    "exec": ("a", (), 0),
    "nohup": ("", (), 0),
    "nice": ("n", ("--adjustment",), 0),
    "timeout": ("sk", ("--signal", "--kill-after"), 1),
    "time": ("fo", ("--format", "--output"), 0),
    "sudo": (
        "CDghpRrTUu",
        (
            "--chdir",
            "--group",
            "--host",
            "--prompt",
            "--user",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
            "--command-timeout",
        ),
        0,
    ),  # fmt: skip
    "doas": ("Cu", (), 0),
    "setsid": ("", (), 0),
    "stdbuf": ("ioe", ("--input", "--output", "--error"), 0),
    "ionice": ("cnp", ("--class", "--classdata", "--pid"), 0),
    "xargs": (
        "IiLlnPdEesa",
        (
            "--delimiter",
            "--eof",
            "--replace",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--arg-file",
            "--process-slot-var",
        ),
        0,
    ),  # fmt: skip
    "coproc": ("", (), 0),
    "chronic": ("", (), 0),
    "unbuffer": ("", (), 0),
    "caffeinate": ("tw", (), 0),
    "flock": ("wEn", ("--timeout", "--conflict-exit-code"), 1),
    "chroot": ("", ("--userspec", "--groups"), 1),
    "watch": ("nd", ("--interval",), 0),
    "strace": ("eoOpsSuEPIab", (), 0),
    "ltrace": ("eoOpsSuEnab", (), 0),
    "busybox": ("", (), 0),
}
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "rbash"})
# Programs known to only read the files they name (their redirections are judged on their own).
READ_ONLY = frozenset(
    {
        "cat", "head", "tail", "less", "more", "ls", "stat", "file", "wc", "grep", "egrep", "fgrep", "rg", "ag",
        "diff", "cmp", "comm", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum",
        "cksum", "du", "df", "tree", "readlink", "realpath", "basename", "dirname", "test", "[", "echo", "printf",
        "pwd", "which", "type", "true", "false", "nl", "od", "hexdump", "xxd", "strings", "column", "cut", "tr",
        "fold", "rev", "tac", "zcat", "bzcat", "xzcat", "lsof", "id", "whoami", "date", "env", "printenv",
        "uname", "hostname", "jq", "yq", "cd",
    }
)  # fmt: skip
GIT_READ = frozenset(
    {"status", "diff", "log", "show", "blame", "ls-files", "ls-tree", "rev-parse", "describe", "grep", "cat-file",
     "shortlog", "reflog", "whatchanged", "name-rev", "merge-base", "rev-list", "for-each-ref", "show-ref"}
)  # fmt: skip
GIT_CONFIG_READ = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--show-origin",
                             "--show-scope", "--name-only", "get", "list"})  # fmt: skip
# Programs whose removal or move of a directory takes what is under it along.
DESTRUCTIVE = frozenset({"rm", "rmdir", "mv", "chmod", "chown", "chgrp", "chattr", "shred", "unlink", "rsync", "find"})
FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
# Programs that write into a directory under their sources' names (`cp -r x/.claude .`).
INTO_DIR = frozenset({"cp", "mv", "rsync", "install", "ln"})
MAX_DEPTH = 4  # nested `sh -c` levels looked into
MAX_GLOB = 4096


class Invocation:
    """One program as it runs: its name (a base name, `None` where it is only known at run time), its arguments
    (their values; `None` for one known only at run time), and the words as written."""

    __slots__ = ("name", "args", "raw")

    def __init__(self, name: str | None, args: list[str | None], raw: list[str]) -> None:
        self.name = name
        self.args = args
        self.raw = raw

    @property
    def text(self) -> str:
        return " ".join([self.name or "?", *(a if a is not None else "?" for a in self.args)])

    def __repr__(self) -> str:
        return f"Invocation({self.text!r})"


def program_name(value: str | None) -> str | None:
    """`/bin/rm` -> `rm`, `\\rm` -> `rm` (the escape is gone from the value already)."""
    if value is None or not value:
        return None
    return os.path.basename(value.rstrip("/")) or None


def effective(part: shell.Part, depth: int = 0) -> list[Invocation]:
    """The programs this simple command runs, wrappers stripped, with those it runs in turn (`sh -c`, `eval`,
    `find -exec`, `xargs`)."""
    words = [w.value for w in part.words]
    raw = [w.text for w in part.words]
    out: list[Invocation] = []
    _unwrap(words, raw, out, depth)
    return out


def _skip_options(words: list[str | None], i: int, valued: str, long_valued: tuple[str, ...]) -> int:
    """The index of the first word after a wrapper's options (from `i`)."""
    while i < len(words):
        w = words[i]
        if w is None:
            return i
        if w == "--":
            return i + 1
        if w.startswith("--"):
            name = w.split("=", 1)[0]
            i += 2 if ("=" not in w and name in long_valued) else 1
            continue
        if w.startswith("-") and len(w) > 1:
            # A cluster: `-u root`, `-uroot`, `-En`; the first option taking a value takes the rest or the next word.
            for k, ch in enumerate(w[1:], start=1):
                if ch in valued:
                    i += 1 if k < len(w) - 1 else 2
                    break
            else:
                i += 1
            continue
        return i
    return i


def _unwrap(words: list[str | None], raw: list[str], out: list[Invocation], depth: int) -> None:
    """The program `words` run, past its wrappers, into `out`, then what that program runs in turn."""
    i = _past_wrappers(words, out, depth)
    if i is None:
        return  # `env -S '...'`: its script was read instead
    if i >= len(words):
        if words:
            out.append(Invocation(program_name(words[-1]), [], raw[-1:]))
        return
    name = program_name(words[i])
    args = words[i + 1 :]
    out.append(Invocation(name, args, raw[i:]))
    if name is not None and depth < MAX_DEPTH:
        _what_it_runs(name, args, raw[i + 1 :], out, depth)


def _past_wrappers(words: list[str | None], out: list[Invocation], depth: int) -> int | None:
    """The index of the program past assignments and wrappers (`env FOO=1`, `sudo -u x`, `timeout 5`); None when
    `env -S SCRIPT` was read as a script into `out`."""
    i = 0
    while i < len(words):
        w = words[i]
        if w is not None and "=" in w and not w.startswith(("=", "-")) and w.split("=", 1)[0].isidentifier():
            i += 1  # an assignment before the program (after `env`, or `sudo FOO=1 cmd`)
            continue
        name = program_name(w)
        if name == "env":
            j = _past_env(words, i + 1, out, depth)
            if j is None:
                return None
            i = j
            continue
        if name not in WRAPPERS or name == "xargs":
            return i
        valued, long_valued, positional = WRAPPERS[name]
        j = _skip_options(words, i + 1, valued, long_valued) + positional
        if j >= len(words):  # the wrapper alone (`time`, `nice`): it runs itself
            return i
        i = j
    return i


def _past_env(words: list[str | None], j: int, out: list[Invocation], depth: int) -> int | None:
    """Past `env`'s options (from `j`); None when `-S SCRIPT` was read as a script into `out`."""
    while j < len(words):
        v = words[j]
        if v is None:
            break
        if v in ("-S", "--split-string") or v.startswith(("-S", "--split-string=")):
            if v.startswith("--split-string="):
                script: str | None = v.split("=", 1)[1]
            elif v.startswith("-S") and len(v) > 2:
                script = v[2:]
            else:
                script = words[j + 1] if j + 1 < len(words) else None
            _nested(script, out, depth)
            return None
        if v in ("-u", "--unset", "-C", "--chdir"):
            j += 2
        elif v.startswith("-") and v != "-":
            j += 1
        else:
            break
    return j


def _what_it_runs(name: str, args: list[str | None], raw: list[str], out: list[Invocation], depth: int) -> None:
    """The commands program `name` runs in turn: `sh -c SCRIPT`, `eval WORDS`, `xargs CMD`, `find -exec CMD ;`."""
    if name in SHELLS:
        found = _shell_script(args)
        if not isinstance(found, bool):
            _nested(found, out, depth)
    elif name == "eval":
        _nested(" ".join(a for a in args if a is not None) if all(a is not None for a in args) else None, out, depth)
    elif name == "xargs":
        valued, long_valued, _ = WRAPPERS["xargs"]
        j = _skip_options(args, 0, valued, long_valued)
        if j < len(args):
            _unwrap(args[j:], raw[j:], out, depth + 1)
    elif name == "find":
        k = 0
        while k < len(args):
            if args[k] in ("-exec", "-execdir", "-ok", "-okdir"):
                end = k + 1
                while end < len(args) and args[end] not in (";", "+"):
                    end += 1
                _unwrap(args[k + 1 : end], raw[k + 1 : end], out, depth + 1)
                k = end
            k += 1


def _shell_script(args: list[str | None]) -> str | None | bool:
    """The script of `sh -c SCRIPT` (None: known only at run time); False when it runs no `-c` script."""
    for k, a in enumerate(args):
        if a is None:
            return False
        if a == "--":
            return False
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:]:
            return args[k + 1] if k + 1 < len(args) else False
        if not a.startswith(("-", "+")):
            return False
    return False


def _nested(script: str | None, out: list[Invocation], depth: int) -> None:
    if script is None:
        out.append(Invocation(None, [], ["<a script known only when it runs>"]))
        return
    try:
        parsed = shell.parse(script)
    except Unavailable:
        parsed = None
    if parsed is None:
        out.append(Invocation(None, [], [script]))
        return
    for p in parsed.parts:
        out.extend(effective(p, depth + 1))


# -- the files a command names ---------------------------------------------------------------------------------


class Touch:
    """A file a command names: the word, its real path (None when only known at run time), and whether it may be
    written (`write`), is removed or moved with what it holds (`holds`), or is read."""

    __slots__ = ("word", "path", "write", "holds", "how")

    def __init__(self, word: str, path: str | None, write: bool, holds: bool = False, how: str = "") -> None:
        self.word = word
        self.path = path
        self.write = write
        self.holds = holds
        self.how = how  # "redirect", "argument", "git config"

    def __repr__(self) -> str:
        return f"Touch({self.word!r}, write={self.write})"


def moved_to(inv: Invocation, cwd: str | None) -> str | None:
    """Where `cd DIR` (or `pushd DIR`) leaves the shell: DIR resolved from `cwd`; None where that is known only at
    run time (`cd "$X"`, `cd -`, `popd`, or a directory unknown already)."""
    args = [a for a in inv.args if a is None or not a.startswith("-") or a == "-"]
    if inv.name == "popd" or cwd is None:
        return None
    if not args:
        return os.path.realpath(userfiles.home())
    if args[0] is None or args[0] == "-":
        return None
    return paths.resolve(args[0], cwd)


def touched(part: shell.Part, cwd: str | None, project: str | None = None) -> list[Touch]:
    """The files this simple command names, with whether it may write them (its redirections included); `cwd` None:
    where it runs is known only at run time, so a relative path is too."""
    out: list[Touch] = []
    for r in part.redirects:
        t = r.target
        if t is None:
            continue
        if t.value is not None and t.value in shell.DEVICES:
            continue
        if r.writes or r.reads:
            for p in _paths_of(t.value, t.text, t.glob, cwd, project):
                out.append(Touch(t.text, p, write=r.writes, how="redirect"))
    for inv in effective(part):
        out.extend(_arguments(inv, cwd, project))
    return out


def _arguments(inv: Invocation, cwd: str | None, project: str | None) -> list[Touch]:
    """The files a program's arguments name: all of them may be written unless the program only reads."""
    name = inv.name
    if name == "git":
        config = _git_config(inv, cwd, project)
        if config is not None:
            return [config]
    reads_only = _reads_only(inv)
    destructive = name in DESTRUCTIVE and (name != "find" or "-delete" in inv.args)
    out: list[Touch] = []
    literal_args: list[str] = []
    for a, text in zip(inv.args, inv.raw[1:], strict=False):
        if a is None:
            out.append(Touch(text, None, write=not reads_only, how="argument"))
            continue
        for c in _candidates(a):
            glob = c is a and _is_glob_word(text)
            for p in _paths_of(c, text, glob, cwd, project):
                out.append(Touch(text, p, write=not reads_only, holds=destructive, how="argument"))
        if not a.startswith("-"):
            literal_args.append(a)
    if name in INTO_DIR and len(literal_args) >= 2:
        out += _into_dir(literal_args, cwd)
    return out


def _reads_only(inv: Invocation) -> bool:
    if inv.name == "git":
        sub = next((a for a in inv.args if a is not None and not a.startswith("-")), None)
        return sub in GIT_READ
    if inv.name == "find":  # it reads what it searches, unless it deletes or prints into files
        return not any(a in FIND_WRITES for a in inv.args)
    return inv.name in READ_ONLY


def _git_config(inv: Invocation, cwd: str | None, project: str | None) -> Touch | None:
    """`git config` that sets anything writes `.git/config` (or, with `--global`/`--system`, `~/.gitconfig`)."""
    sub = next((a for a in inv.args if a is not None and not a.startswith("-")), None)
    if sub != "config":
        return None
    rest = inv.args[inv.args.index("config") + 1 :]
    if any(a in GIT_CONFIG_READ for a in rest if a is not None):
        return None
    if any(a in ("--global", "--system") for a in rest):
        return Touch("git config", os.path.join(os.path.realpath(userfiles.home()), ".gitconfig"), write=True,
                     how="git config")  # fmt: skip
    return Touch("git config", os.path.join(os.path.realpath(project or cwd or "/"), ".git", "config"), write=True,
                 how="git config")  # fmt: skip


def _candidates(a: str) -> list[str]:
    """The paths an argument may name: itself, an option's value (`--output=x`, `of=x`, `-o.claude/x`)."""
    if a.startswith("-") and "=" not in a and len(a) > 2 and not a.startswith("--") and "/" in a:
        found = [a, a[2:]]
    elif "=" in a:
        found = [a, a.split("=", 1)[1]]
    else:
        found = [a]
    return [c for c in found if c and not c.startswith("-") and "://" not in c]


def _into_dir(literal_args: list[str], cwd: str | None) -> list[Touch]:
    """`cp -r x/.claude .`: a program that writes into a directory under its sources' names writes those names."""
    dest = literal_args[-1]
    dpath = _resolve(dest, cwd)
    if dpath is None or not os.path.isdir(dpath):
        return []
    out = []
    for src in literal_args[:-1]:
        base = os.path.basename(src.rstrip("/"))
        if base and base not in (".", ".."):
            out.append(Touch(f"{dest} ({base})", os.path.join(dpath, base), write=True, how="argument"))
    return out


def _is_glob_word(text: str) -> bool:
    return shell._has_glob(text) and not text.startswith(("'", '"'))


def _resolve(value: str, cwd: str | None) -> str | None:
    """`value` as a real path; None when it is relative and where it runs is known only at run time."""
    if cwd is None and not value.startswith(("/", "~")):
        return None
    return paths.resolve(value, cwd)


def _paths_of(value: str | None, text: str, glob: bool, cwd: str | None, project: str | None) -> list[str | None]:
    if value is None:
        return [_known_text(text, cwd, project)]
    if cwd is None and not value.startswith(("/", "~")):
        return [None]
    if glob:
        found: list[str | None] = list(_expand(value, cwd))
        return found or [_resolve(value, cwd)]
    return [_resolve(value, cwd)]


def _known_text(text: str, cwd: str | None, project: str | None) -> str | None:
    """A word with expansions, when they are only `$HOME`, `~` or `$PWD` in double quotes or none; else None."""
    t = text
    if t.startswith('"') and t.endswith('"') and len(t) >= 2:
        t = t[1:-1]
    for var, val in (("${HOME}", userfiles.home()), ("$HOME", userfiles.home()), ("${PWD}", cwd), ("$PWD", cwd)):
        if var in t:
            if val is None:
                return None
            t = t.replace(var, val)
    if any(c in t for c in "$`\\\"'*?["):
        return None
    return _resolve(t, cwd)


def _expand(pattern: str, cwd: str | None) -> Iterator[str]:
    """The real paths a glob names, as bash expands it (a component starting with `*` or `?` skips dot files)."""
    if pattern.startswith("~"):
        pattern = userfiles.home() + pattern[1:]
    base = "/" if pattern.startswith("/") else (cwd or "/")
    parts = [p for p in pattern.split("/") if p]
    found = [base]
    for comp in parts:
        nxt = []
        if not any(c in comp for c in "*?["):
            nxt = [os.path.join(d, comp) for d in found]
        else:
            for d in found:
                try:
                    names = os.listdir(d)
                except OSError:
                    continue
                for n in names:
                    if n.startswith(".") and not comp.startswith("."):
                        continue
                    if paths.component_match(n, comp):
                        nxt.append(os.path.join(d, n))
                        if len(nxt) > MAX_GLOB:
                            break
        found = nxt
        if not found:
            return
    for f in found:
        yield os.path.realpath(f)
