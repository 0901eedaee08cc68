"""The one rule engine: whether the operator's rules allow, deny or leave to a person one tool call.

Used by the permission hook, by `approve`/`deny` and their "always" form, by
the main brain's `brain_may_allow` check, by `cocoplus permissions check`,
and for what the adapters pass on to each runtime.  The semantics are
written down once, in docs/guides/permissions.md; in short:

* **deny wins**: a deny rule that covers the call, or any part of a
  compound command, denies it;
* **protected paths are the operator's**: a call that writes a protected
  path (rules/protected.py), or reads a secret, is asked, whatever the allow
  rules say (only the operator's approval of that one request lets it run);
* **allow is narrow**: a shell command is allowed only when every simple
  command in it is allowed by a rule, as written, every file it redirects to
  by a path rule, and nothing in it is beyond checking; else it is **asked**.

`decide(...)` returns a `Decision`: the behaviour, the rule that decided (for
a chain, the rule of each part), where the rule came from, and why, in words.
Deny rules are matched against each program as it really runs (`/bin/rm`,
`env FOO=1 rm`, `sudo rm`, `xargs rm` are `rm`; `-rf`, `-fr`, `-r -f` alike):
a tripwire, not a sandbox.  Standard library only besides the shell parser.
"""

from __future__ import annotations

import os

from cocoplus.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Iterable, Sequence
    from typing import Any

    from cocoplus.rules import commands, shell

# The tool input field a rule's pattern is matched against, by Claude Code tool name.
# The tools a sandboxed worker's sandbox names in a request (no runtime has them): a host its proxy held
# (sandbox/netproxy.py) and a write it refused (sandbox/writes.py), each ruled on as a runtime's tool is.
NETWORK = "Network"
SANDBOX_WRITE = "SandboxWrite"
PATTERN_FIELD = {
    "Bash": "command", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path", "Read": "file_path",
    "NotebookEdit": "notebook_path", "NotebookRead": "notebook_path", "Glob": "pattern", "Grep": "pattern",
    "WebFetch": "url", "WebSearch": "query", NETWORK: "host", SANDBOX_WRITE: "path",
}  # fmt: skip
WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
READ_TOOLS = ("Read", "NotebookRead", "Glob", "Grep")
# Programs that write the files their arguments name: an argument known only at run time may be a protected path.
WRITERS = frozenset(
    {
        "cp", "mv", "tee", "sed", "ln", "rm", "rmdir", "chmod", "chown", "chgrp", "truncate", "install", "touch",
        "mkdir", "dd", "rsync", "unlink", "shred", "patch", "chattr", "tar", "unzip",
    }
)  # fmt: skip
MAX_SHOWN = 120  # characters of a part shown in a reason


class Rule:
    """A parsed rule: `Tool` or `Tool(pattern)` in Claude Code's syntax."""

    __slots__ = ("text", "tool", "pattern", "where")

    def __init__(self, text: str, tool: str, pattern: str | None, where: str = "") -> None:
        self.text = text
        self.tool = tool
        self.pattern = pattern
        self.where = where

    @property
    def bare(self) -> bool:
        return self.pattern is None or self.pattern == "*"


class Decision:
    """What the rules decide about one call."""

    __slots__ = ("behavior", "rule", "where", "why", "protected", "parts")

    def __init__(
        self,
        behavior: str,
        why: str,
        rule: str | None = None,
        where: str | None = None,
        protected: list[str] | None = None,
        parts: list[dict[str, Any]] | None = None,
    ) -> None:
        self.behavior = behavior  # "allow", "deny" or "ask"
        self.why = why
        self.rule = rule
        self.where = where
        self.protected = protected or []
        self.parts = parts or []

    def as_dict(self) -> dict[str, Any]:
        return {
            "decision": self.behavior, "rule": self.rule, "where": self.where, "why": self.why,
            "protected": self.protected, "parts": self.parts,
        }  # fmt: skip

    def __repr__(self) -> str:
        return f"Decision({self.behavior!r}, {self.rule!r}, {self.why!r})"


# -- rules ------------------------------------------------------------------------------------------------


def wildcard(text: str, pattern: str) -> bool:
    """Whether `pattern` matches all of `text`: `*` stands for any run of characters (`/` and spaces included),
    `?` for one.  Written out (the classic two-pointer match) rather than with `fnmatch`, whose `re` would cost
    the permission hook more than its other work."""
    t = p = 0
    star = -1
    mark = 0
    while t < len(text):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]):
            t += 1
            p += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif star >= 0:
            p = star + 1
            mark += 1
            t = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def parse_rule(rule: Any) -> tuple[str, str | None]:
    """`Tool` or `Tool(pattern)` -> (tool, pattern or None); UsageError for anything else."""
    text = rule.strip() if isinstance(rule, str) else ""
    if not text:
        raise UsageError("a permission rule is empty")
    tool, sep, rest = text.partition("(")
    tool = tool.strip()
    if not tool or not all(c.isalnum() or c in "_-*" for c in tool):
        raise UsageError(
            f"permission rule {rule!r}: expected Tool or Tool(pattern), as in Claude Code (Bash(pytest *), Edit)"
        )
    if not sep:
        return tool, None
    if not rest.endswith(")"):
        raise UsageError(f"permission rule {rule!r}: the pattern is not closed with ')'")
    pattern = rest[:-1].strip()
    if pattern.endswith(":*"):  # Claude Code's older prefix form: `Bash(npm run test:*)`
        pattern = pattern[:-2] + " *"
    return tool, pattern or None


def rules_of(texts: Iterable[Any], where: str) -> list[Rule]:
    """The well-formed rules of `texts`, each remembering where it came from; a malformed rule is left out (config
    show and doctor report it)."""
    out = []
    for t in texts:
        try:
            tool, pattern = parse_rule(t)
        except UsageError:
            continue
        out.append(Rule(str(t).strip(), tool, pattern, where))
    return out


def _names(rule_tool: str, tool: str) -> bool:
    """Whether a rule's tool part names `tool`: itself, a wildcard, an MCP server's every tool (`mcp__srv`)."""
    if wildcard(tool, rule_tool):
        return True
    return rule_tool.startswith("mcp__") and rule_tool.count("__") == 1 and tool.startswith(rule_tool + "__")


def _names_tool(rule: Rule, tool: str) -> bool:
    if _names(rule.tool, tool):
        return True
    # Claude Code: Edit rules apply to every tool that edits files; Read rules to those that read them.
    if rule.tool == "Edit" and tool in WRITE_TOOLS:
        return True
    return rule.tool == "Read" and tool in READ_TOOLS and rule.pattern is not None


def subject(tool: str, tool_input: Any) -> str | None:
    """What a rule's pattern is matched against for this call (the command, the file path, ...)."""
    if not isinstance(tool_input, dict):
        return None
    value = tool_input.get(PATTERN_FIELD.get(tool, ""))
    return value if isinstance(value, str) else None


# -- deciding ------------------------------------------------------------------------------------------------


def decide(
    tool: str,
    tool_input: Any,
    *,
    allow: Sequence[Rule] = (),
    deny: Sequence[Rule] = (),
    project: str,
    cwd: str | None = None,
    tree: str | None = None,
) -> Decision:
    """What `allow` and `deny` (parsed rules, `rules_of`) decide for this call, in the project `project`
    (`tree`: the worker's own git worktree, where path rules are meant for; `cwd`: the call's directory)."""
    root = tree or project
    cwd = cwd if isinstance(cwd, str) and os.path.isabs(cwd) else root
    for r in deny:
        if r.bare and _names(r.tool, tool):
            return Decision("deny", f"{r.text} refuses every {tool} call", r.text, r.where)
    if tool == "Bash":
        command = subject(tool, tool_input)
        if command is None:
            return Decision("ask", "the call names no command")
        return _bash(command, allow, deny, project, cwd, root, tree)
    if tool in WRITE_TOOLS or tool in READ_TOOLS:
        path = _path_of(tool, tool_input)
        if path is not None:
            return _file(tool, path, allow, deny, project, cwd, root, tree)
    return _other(tool, tool_input, allow, deny)


def _path_of(tool: str, tool_input: Any) -> str | None:
    if not isinstance(tool_input, dict):
        return None
    field = PATTERN_FIELD.get(tool, "file_path")
    if tool in ("Glob", "Grep"):
        field = "path"
    value = tool_input.get(field)
    return value if isinstance(value, str) and value else None


def _other(tool: str, tool_input: Any, allow: Sequence[Rule], deny: Sequence[Rule]) -> Decision:
    value = subject(tool, tool_input)
    for verdict, rules in (("deny", deny), ("allow", allow)):
        for r in rules:
            if _names(r.tool, tool) and (r.bare or (value is not None and _pattern_covers(r.pattern or "", value))):
                return Decision(verdict, f"{r.text} covers this {tool} call", r.text, r.where)
    return Decision("ask", f"no rule covers this {tool} call")


def _pattern_covers(pattern: str, value: str) -> bool:
    if pattern.startswith("domain:"):
        from urllib.parse import urlsplit  # deferred: only a domain rule reads a URL

        try:
            host = (urlsplit(value).hostname or "").lower()
        except ValueError:
            return False
        return wildcard(host, pattern[len("domain:") :].strip().lower())
    return wildcard(value, pattern)


def _file(
    tool: str, value: str, allow: Sequence[Rule], deny: Sequence[Rule], project: str, cwd: str, root: str,
    tree: str | None,
) -> Decision:  # fmt: skip
    from cocoplus.rules import paths, protected  # deferred: only a file tool's call resolves a path

    path = paths.resolve(value, cwd)
    shown = _shown_path(path, root)
    for r in deny:
        if _names_tool(r, tool) and r.pattern is not None and paths.pattern_covers(r.pattern, path, root):
            return Decision("deny", f"{r.text} covers {shown}", r.text, r.where)
    table = protected.Table(project, tree)
    hit = table.write(path) if tool in WRITE_TOOLS else table.read(path)
    if hit is not None:
        what = f"writes {hit}, which {protected.WHY}" if tool in WRITE_TOOLS else f"reads {hit}, a secret"
        return Decision(
            "ask", f"this call {what}: only the operator may allow it, one request at a time", protected=[hit]
        )
    for r in allow:
        if _names_tool(r, tool) and (r.bare or paths.pattern_covers(r.pattern or "", path, root)):
            return Decision("allow", f"{r.text} covers {shown}", r.text, r.where)
    where = (
        "" if paths.inside(path, os.path.realpath(root)) else " (outside the " + ("worktree)" if tree else "project)")
    )
    return Decision("ask", f"no rule covers {tool} of {shown}{where}")


def _shown_path(path: str, root: str) -> str:
    from cocoplus.rules import paths  # deferred: as in _file

    rel = paths.relative(path, os.path.realpath(root))
    return rel if rel is not None else path


def _short(text: str) -> str:
    """A command as a reason quotes it: one line, nothing a terminal would act on, at most MAX_SHOWN characters."""
    one = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return one if len(one) <= MAX_SHOWN else one[: MAX_SHOWN - 1] + "…"


def _ordinal(i: int, n: int) -> str:
    return "the command" if n == 1 else f"part {i} of the chain"


def _bash(
    command: str, allow: Sequence[Rule], deny: Sequence[Rule], project: str, cwd: str, root: str, tree: str | None
) -> Decision:
    from cocoplus.rules import Unavailable, shell  # deferred: only a shell command is parsed

    shell_deny = [r for r in deny if _names(r.tool, "Bash") and not r.bare]
    flat = " ".join(command.split())
    for r in shell_deny:
        if bash_covers(r.pattern or "", flat):
            return Decision("deny", f"{r.text} covers the command", r.text, r.where)
    try:
        script = shell.parse(command)
    except Unavailable as exc:
        return Decision("ask", f"{exc}: no rule can allow a shell command that is more than plain words")
    if script is None:
        return Decision("ask", "the shell parser cannot read all of this command: no rule allows it")
    if not script.parts:
        return Decision("ask", "the command runs nothing a rule could name")
    return _Judge(script, allow, shell_deny, deny, project, root, tree).decide(cwd)


class _Judge:
    """One shell command judged part by part: the deny rules, the files each part touches, the allow rules."""

    def __init__(
        self, script: shell.Script, allow: Sequence[Rule], shell_deny: list[Rule], deny: Sequence[Rule],
        project: str, root: str, tree: str | None,
    ) -> None:  # fmt: skip
        from cocoplus.rules import protected  # deferred: as in _bash

        self.script = script
        self.allow = allow
        self.shell_deny = shell_deny
        self.file_deny = [r for r in deny if r.pattern is not None and (r.tool in WRITE_TOOLS or r.tool == "Read")]
        self.file_allow = [r for r in allow if r.tool in WRITE_TOOLS]
        self.project = project
        self.root = root
        self.table = protected.Table(project, tree)
        self.parts: list[dict[str, Any]] = []
        self.hits: list[str] = []  # protected paths written
        self.secrets: list[str] = []  # secrets read
        self.pending: list[str] = []  # why each uncovered piece is not allowed, in order
        self.used: list[Rule] = []
        self.unknown_program = False

    def decide(self, cwd: str) -> Decision:
        from cocoplus.rules import commands, protected  # deferred: as in _bash

        n = len(self.script.parts)
        here: str | None = cwd  # where the next part runs: a `cd` moves it, one known only at run time loses it
        for i, part in enumerate(self.script.parts, start=1):
            label = _ordinal(i, n)
            invocations = commands.effective(part)
            if invocations and invocations[0].name in ("cd", "pushd", "popd", "chdir"):
                here = commands.moved_to(invocations[0], here)
            denied = self._denied(part, invocations, label) or self._touches(part, invocations, here, label)
            if denied is not None:
                return denied
            self._allowed(i, part, invocations, here, label)
        if self.hits or self.secrets:
            said = [f"writes {', '.join(self.hits)}, which {protected.WHY}"] if self.hits else []
            said += [f"reads {', '.join(self.secrets)}, a secret"] if self.secrets else []
            return Decision(
                "ask", f"this command {' and '.join(said)}: only the operator may allow it, one request at a time",
                protected=[*self.hits, *self.secrets], parts=self.parts,
            )  # fmt: skip
        if self.unknown_program and self.shell_deny:
            return Decision(
                "ask", "a program in this command is known only when it runs: a deny rule cannot be ruled out",
                parts=self.parts,
            )  # fmt: skip
        if self.pending:
            return Decision("ask", self.pending[0], parts=self.parts)
        names = list(dict.fromkeys(r.text for r in self.used))
        where = self.used[0].where if self.used else None
        return Decision("allow", _allowed_why(names, n), ", ".join(names), where, parts=self.parts)

    def _denied(self, part: shell.Part, invocations: list[commands.Invocation], label: str) -> Decision | None:
        """A deny rule that covers a program this part runs (wrappers stripped, nested commands looked into)."""
        for inv in invocations:
            if inv.name is None:
                self.unknown_program = True
                continue
            for r in self.shell_deny:
                if deny_covers(r.pattern or "", inv):
                    seen = f" (as `{_short(inv.text)}`)" if _short(inv.text) != _short(part.text) else ""
                    return Decision(
                        "deny", f"{r.text} covers {label}, `{_short(part.text)}`{seen}", r.text, r.where,
                        parts=self.parts,
                    )  # fmt: skip
        return None

    def _touches(
        self, part: shell.Part, invocations: list[commands.Invocation], here: str | None, label: str
    ) -> Decision | None:
        """The files the part names: a deny path rule that covers one denies; protected paths and secrets are
        noted; a redirection is a write that a Write or Edit rule must cover."""
        from cocoplus.rules import commands, paths  # deferred: as in _bash

        writers = {inv.name for inv in invocations} & WRITERS
        self._covers: list[Rule] = []
        self._uncovered: list[str] = []
        for t in commands.touched(part, here, self.project):
            if t.path is None:
                if t.write and (t.how == "redirect" or writers):
                    self.pending.append(f"{label}, `{_short(part.text)}`, writes `{t.word}`, known only when it runs")
                continue
            for r in self.file_deny:
                if (r.tool == "Read") != t.write and paths.pattern_covers(r.pattern or "", t.path, self.root):
                    return Decision("deny", f"{r.text} covers `{t.word}` in {label}", r.text, r.where)
            hit = (self.table.write(t.path) or (self.table.inside(t.path) if t.holds else None)) if t.write else None
            secret = None if hit else self.table.read(t.path)
            if hit is not None and hit not in self.hits:
                self.hits.append(hit)
            elif secret is not None and secret not in self.secrets:
                self.secrets.append(secret)
            if hit is not None or secret is not None or not (t.write and t.how == "redirect"):
                continue
            cover = next(
                (r for r in self.file_allow if paths.pattern_covers(r.pattern or "**", t.path, self.root)), None
            )
            if cover is None:  # unless the part is allowed by a rule for every command (`Bash`), below
                self._uncovered.append(f"{label} writes `{t.word}`, which no Write or Edit rule covers")
            else:
                self._covers.append(cover)
        return None

    def _allowed(
        self, i: int, part: shell.Part, invocations: list[commands.Invocation], here: str | None, label: str
    ) -> None:
        """The allow rule that covers the part, as written; what only a rule for every command may allow (as
        Claude Code's own checks): a program computed at run time (`$CMD args`), anything in the command that
        cannot be checked before it runs, and each part's own risks."""
        script = self.script
        unchecked = script.unchecked[0] if script.unchecked else _unchecked_part(part, invocations, here, self.root)
        computed = bool(part.words) and part.words[0].value is None
        narrow = [r for r in self.allow if r.bare] if (computed or unchecked) else self.allow
        rule = _allowing(narrow, part.written)
        self.parts.append(
            {"part": i, "command": _short(part.text), "via": part.via, "rule": rule.text if rule else None}
        )
        if rule is None or not rule.bare:  # a rule for every command covers its redirections too
            self.pending.extend(self._uncovered)
        if rule is not None:
            self.used.append(rule)
        elif unchecked and _allowing(self.allow, part.written) is not None:
            self.pending.append(
                f"{label}, `{_short(part.text)}`, has {unchecked}: only a rule for every command allows it"
            )
        else:
            self.pending.append(f"{label}, `{_short(part.text)}`, is not covered")
        self.used.extend(self._covers)


# Programs that run their words as shell code: no rule short of the tool's own name allows them (as Claude Code).
EVALUATORS = frozenset({"eval", "exec", "source", ".", "trap"})
FIND_ACTIONS = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
)  # fmt: skip
AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox awk"})


def _unchecked_part(part: shell.Part, invocations: list[commands.Invocation], cwd: str | None, root: str) -> str | None:
    """What in this simple command no narrow rule may allow: a program that runs its words as code, `find` that
    runs or deletes, an awk program that runs commands, or a path outside the project (Claude Code asks for each)."""
    from cocoplus.rules import paths  # deferred: as in _bash

    first = part.words[0].value if part.words else None
    if first is not None and (first in EVALUATORS or any(inv.name in EVALUATORS for inv in invocations[:1])):
        return f"`{first}`, which runs its words as shell code"
    for inv in invocations:
        if inv.name == "find" and any(a in FIND_ACTIONS for a in inv.args):
            return "a find action that runs a command or writes"
        if inv.name in AWKS and any(a is None or "system" in a or "|" in a or ">" in a for a in inv.args):
            return "an awk program that may run commands or write files"
    real_root = os.path.realpath(root)
    for w in part.words[1:]:
        v = w.value
        if v is None or not ("/" in v or v.startswith("~") or v in (".", "..")) or "://" in v:
            continue
        if cwd is None and not v.startswith(("/", "~")):
            return f"a path ({_short(w.text)}) whose place is known only when it runs"
        if not paths.inside(paths.resolve(v, cwd), real_root):
            return f"a path outside the project ({_short(w.text)})"
    for r in part.redirects:
        t = r.target
        if t is not None and t.value is not None and r.reads and cwd is not None:
            if not paths.inside(paths.resolve(t.value, cwd), real_root):
                return f"a file outside the project ({_short(t.text)})"
    return None


def _allowed_why(names: list[str], n: int) -> str:
    if n == 1:
        return f"{names[0]} covers the command"
    return f"every one of its {n} parts is covered ({', '.join(names)})"


def _allowing(allow: Sequence[Rule], text: str) -> Rule | None:
    for r in allow:
        if _names(r.tool, "Bash") and (r.bare or bash_covers(r.pattern or "", text)):
            return r
    return None


def bash_covers(pattern: str, text: str) -> bool:
    """Whether an allow pattern covers one simple command, as written: `*` any characters (any other character,
    `?` too, stands for itself, as in Claude Code); a pattern ending in ` *` with no other wildcard also covers
    the command alone (`Bash(ls *)` covers `ls`, not `lsof`)."""
    if star_match(text, pattern):
        return True
    return pattern.endswith(" *") and pattern.count("*") == 1 and text == pattern[:-2].rstrip()


def star_match(text: str, pattern: str) -> bool:
    """`pattern` matches all of `text` where `*` stands for any run of characters and nothing else is special."""
    t = p = 0
    star = -1
    mark = 0
    while t < len(text):
        if p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif p < len(pattern) and pattern[p] == text[t]:
            t += 1
            p += 1
        elif star >= 0:
            p = star + 1
            mark += 1
            t = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _split_tokens(tokens: Iterable[str]) -> tuple[set[str], list[str], list[str]]:
    """(short option letters, long options, the other words) of `tokens`, options read until `--`."""
    flags: set[str] = set()
    longs: list[str] = []
    rest: list[str] = []
    ended = False
    for t in tokens:
        if not ended and t == "--":
            ended = True
            continue
        if not ended and len(t) > 1 and t[0] == "-" and t[1] != "-" and "*" not in t and t[1:].isalnum():
            flags.update(t[1:])
        elif not ended and t.startswith("--") and len(t) > 2:
            longs.append(t)
        else:
            rest.append(t)
    return flags, longs, rest


def deny_covers(pattern: str, inv: commands.Invocation) -> bool:
    """Whether a deny pattern covers one program as it runs: the program by its base name, every short option the
    pattern names among the command's (in any cluster or order), every long option, and the other words in
    order (`*` any run of them)."""
    tokens = pattern.split()
    if not tokens or inv.name is None:
        return not tokens
    prog = os.path.basename(tokens[0].lstrip("\\")) or tokens[0]
    if not wildcard(inv.name, prog):
        return False
    pflags, plongs, prest = _split_tokens(tokens[1:])
    cflags, clongs, crest = _split_tokens(a if a is not None else "?" for a in inv.args)
    if not pflags <= cflags:
        return False
    if not all(any(wildcard(c, p) for c in clongs) for p in plongs):
        return False
    return bash_covers(" ".join(prest), " ".join(crest)) if prest else not crest


# -- the rules a request remembers ("always") ----------------------------------------------------------------


def rules_for(tool: str, tool_input: Any) -> list[str]:
    """The narrowest rules that name this very call, one per part of a shell command (what `approve --always`
    remembers): `Bash(pytest -q)`, or `Bash(cd src)` and `Bash(pytest -q)` for `cd src && pytest -q`."""
    value = subject(tool, tool_input)
    if value is None:
        return [tool]
    if tool == "Bash":
        from cocoplus.rules import Unavailable, shell  # deferred: as in _bash

        try:
            script = shell.parse(value)
        except Unavailable:
            script = None
        if script is not None and script.parts:
            return list(dict.fromkeys(f"Bash({p.text})" for p in script.parts))
    value = " ".join(value.split())
    return [f"{tool}({value})"]


def rule_for(tool: str, tool_input: Any) -> str:
    """The call in rule form, as requests and the audit log show it (the whole command, spaces collapsed)."""
    value = subject(tool, tool_input)
    if value is None:
        return tool
    return f"{tool}({' '.join(value.split())})"
