"""A shell command as the rules see it: every simple command in it, and every file it redirects to.

`parse(command)` reads a command with a real shell parser (tree-sitter's bash
grammar) and returns a `Script`: the simple commands (`Part`) that running it
may execute, wherever they stand (a chain with `&&`, `||`, `;`, `|`, `&` or a
newline; a subshell or a `{ ...; }` group; `$(...)`, backticks and process
substitution, also inside strings and here-documents; the bodies of `if`,
`while`, `for`, `case` and of a function), and the redirections to files.  A
command the parser cannot read whole (an error or a missing piece in its tree,
or a construct this module does not know) is `None`: no rule allows it.

`Script.unchecked` says what in the command cannot be checked before it runs
(a nested command, a variable in braces, a subshell, `&`, ...): no narrow rule
allows that (rules/engine.py).  The parser itself is loaded on first use, by
`rules/parser.py`; `parse` raises its `Unavailable` (`cocoplus.rules.Unavailable`)
when it cannot be had.

A command that is only plain words (`pytest -q tests/unit`, `git status`:
letters, digits and `-_./:,+@%^=`, separated by spaces or tabs, its first
word a program's name and no reserved word) is read without the parser (`plain`),
into exactly the `Script` the parser makes of it: loading the parser costs
the permission hook more than the rest of its rule check.
tests/rules/test_plain.py holds the two equal over generated commands.
Standard library only besides the parser.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

# Nodes that hold statements to look into (a list or pipeline of them, a group, a loop's body, ...).
_CONTAINERS = frozenset(
    {
        "program", "list", "pipeline", "subshell", "compound_statement", "do_group", "negated_command",
        "if_statement", "elif_clause", "else_clause", "while_statement", "until_statement", "for_statement",
        "c_style_for_statement", "case_statement", "case_item", "select_statement",
    }
)  # fmt: skip
# Leaves and punctuation that carry nothing to run.
_INERT = frozenset(
    {
        "comment", "&&", "||", ";", ";;", ";&", ";;&", "|", "|&", "&", "(", ")", "{", "}", "!", "if", "then",
        "elif", "else", "fi", "while", "until", "for", "select", "in", "do", "done", "case", "esac", "function",
        "variable_name", "\n", "=", "[[", "]]", "((", "))",
    }
)  # fmt: skip
# Word-like nodes whose value is known before the command runs when nothing inside them expands.
_EXPANDING = frozenset(
    {
        "simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion",
        "brace_expression",
    }
)  # fmt: skip
_SUBSTITUTIONS = ("command_substitution", "process_substitution")
# Word-like nodes whose value no rule can judge before the command runs (Claude Code asks for each).
_WORD_NOTES = {
    "expansion": "a variable in braces (${...})", "brace_expression": "brace expansion",
    "ansi_c_string": "$'...' text", "translated_string": '$"..." text',
}  # fmt: skip
_REDIRECTS = ("file_redirect", "heredoc_redirect", "herestring_redirect")
# Redirection targets that are not files.
DEVICES = frozenset({"/dev/null"})  # other devices are paths outside the project (Claude Code asks for them too)
GLOB_CHARS = frozenset("*?[")


class Word:
    """One word of a simple command: as written (`text`), and its value where it is known before the command runs
    (`value`: quotes removed, escapes applied; None where something in it expands)."""

    __slots__ = ("text", "value", "glob")

    def __init__(self, text: str, value: str | None, glob: bool = False) -> None:
        self.text = text
        self.value = value
        self.glob = glob  # an unquoted `*`, `?` or `[` the shell expands against the file system

    def __repr__(self) -> str:
        return f"Word({self.text!r})"


class Redirect:
    """A redirection: its operator (`>`, `>>`, `<`, `&>`, `>|`, `<>`, `>&`, ...), the file descriptor it names, and
    its target word."""

    __slots__ = ("op", "fd", "target")

    def __init__(self, op: str, fd: str | None, target: Word | None) -> None:
        self.op = op
        self.fd = fd
        self.target = target

    @property
    def writes(self) -> bool:
        """Whether it opens its target for writing (a duplication such as `2>&1` or `>&2` opens no file)."""
        if self.target is None or self.op in ("<", "<<", "<<<", "<<-", "<&", "<&-"):
            return False
        if self.op in (">&", "&>", ">&-") and self.target.value is not None and _is_fd(self.target.value):
            return False
        return True

    @property
    def reads(self) -> bool:
        return self.target is not None and self.op in ("<", "<>")

    def __repr__(self) -> str:
        return f"Redirect({self.op!r}, {self.target!r})"


class Part:
    """One simple command: its assignments (`FOO=1`), its words (the program first; empty for an assignment
    alone), and the redirections written on it or on a statement around it.  `via` says where it stands
    (`chain`, `substitution`, `function f`, ...) and `text` is how it reads, words joined by single spaces."""

    __slots__ = ("assigns", "words", "redirects", "via", "kind", "_text", "span")

    def __init__(self, kind: str, via: str) -> None:
        self.kind = kind  # "command", "assignment", "declaration" (export, local, ...), "test" ([[ ... ]])
        self.via = via
        self.assigns: list[Word] = []
        self.words: list[Word] = []
        self.redirects: list[Redirect] = []
        self._text: str | None = None
        self.span: str | None = None  # the command as written, from its first word to its last (allow rules)

    @property
    def written(self) -> str:
        """How the command is written (its words' whitespace kept, line continuations removed): what an exact
        rule is matched against, as Claude Code does."""
        return (self.span if self.span is not None else self.text).replace("\\\n", "")

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = " ".join(w.text for w in (*self.assigns, *self.words))
        return self._text

    def __repr__(self) -> str:
        return f"Part({self.text!r}, via={self.via!r})"


class Script:
    """What `parse` found: the simple commands in the order they appear, and `unchecked`: what in the command
    cannot be checked before it runs (a nested command, a variable in braces, a subshell, `&`, ...), which no rule
    short of the tool's own name may allow (Claude Code asks for each of these too)."""

    __slots__ = ("source", "parts", "unchecked")

    def __init__(self, source: str, parts: list[Part], unchecked: list[str] | None = None) -> None:
        self.source = source
        self.parts = parts
        self.unchecked = unchecked or []

    @property
    def compound(self) -> bool:
        return len(self.parts) != 1


class _Unreadable(Exception):
    pass


class _Found(list["Part"]):
    """The simple commands found so far (a list of `Part`), and what cannot be checked before it runs (`notes`):
    what every function of the walk below appends to."""

    def __init__(self, source: bytes) -> None:
        super().__init__()
        self.source = source
        self.notes: list[str] = []

    def note(self, why: str) -> None:
        if why not in self.notes:
            self.notes.append(why)


# Variables whose value an allow rule may take as known (Claude Code allows `$HOME` in a covered command).
SAFE_VARIABLES = frozenset({"HOME", "PWD"})
NESTED = "a nested command ($(...), backticks, <(...))"


def _is_fd(value: str) -> bool:
    return value == "-" or value.isdigit()


# -- reading a command -------------------------------------------------------------------------------

# What a plain command's words are made of (`plain`): nothing the shell reads as more than the character itself.
PLAIN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+@%^=")
# A plain command's first word, the program: fewer still (the grammar reads `x%`, `x@` or `a+:` there otherwise).
PROGRAM_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./")
# First words that are not a program's name to the parser: the shell's reserved words, and the declarations and
# `unset` (a statement of their own in the grammar).
NOT_A_PROGRAM = frozenset(
    {
        "!", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in", "select",
        "then", "time", "until", "while", "declare", "typeset", "export", "readonly", "local", "unset", "unsetenv",
    }
)  # fmt: skip


def parse(command: str) -> Script | None:
    """The simple commands and redirections of `command`; None when the parser cannot read all of it.
    `Unavailable` when there is no parser and the command is more than plain words (`plain`)."""
    script = plain(command)
    return script if script is not None else parsed(command)


def plain(command: str) -> Script | None:
    """`command` read without the parser when it is plain words: `PLAIN_CHARS` separated by spaces or tabs, no
    word starting with `=`, the first of `PROGRAM_CHARS` (so no assignment), not starting with `-` and not in
    `NOT_A_PROGRAM`.  The `Script` the parser makes of such a command: one simple command whose words are their
    own values.  None for any other command."""
    for c in command:
        if c not in PLAIN_CHARS and c != " " and c != "\t":
            return None
    words = command.split()
    if not words or words[0][0] == "-" or words[0] in NOT_A_PROGRAM:
        return None
    for c in words[0]:
        if c not in PROGRAM_CHARS:
            return None
    for w in words:
        if w[0] == "=":
            return None
    part = Part("command", "chain")
    part.words = [Word(w, w) for w in words]
    part.span = command.strip(" \t")
    return Script(command, [part])


def parsed(command: str) -> Script | None:
    """`command` as the parser reads it (`parse`, for a command that is more than plain words)."""
    from cocoplus.rules import parser  # deferred: a plain command needs no parser (loading it costs the most)

    p = parser.parser()
    data = command.encode("utf-8", "surrogatepass")
    try:
        tree = p.parse(data)
    except Exception:  # noqa: BLE001 - a parser failure is an unreadable command
        return None
    root = tree.root_node
    if root.has_error:
        return None
    found = _Found(data)
    if any(c < " " and c not in "\t\n" or c == "\x7f" for c in command):
        found.note("control characters")  # also: bash and the parser read a backslash before CR LF differently
    if "`" in command:
        found.note(NESTED)  # backticks hide in places the parser reads as text (`${x:-`cmd`}`)
    try:
        _statements(root, "chain", found, [])
    except (_Unreadable, RecursionError):
        return None
    return Script(command, list(found), found.notes)


def _text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "surrogatepass")


def _statements(node: Any, via: str, out: _Found, outer: list[Redirect]) -> None:
    """Every simple command under `node` into `out`; `outer`: redirections of the statements around it."""
    kind = node.type
    if kind in _INERT:
        return
    if node.is_missing or kind == "ERROR":
        raise _Unreadable(kind)
    handler = _HANDLERS.get(kind)
    if handler is not None:
        handler(node, via, out, outer)
    elif kind in _CONTAINERS:
        _container(node, via, out, outer)
    elif kind in ("arithmetic_expansion", "compound_assignment") or kind in _WORDISH:
        _substitutions(node, via, out)
    else:
        raise _Unreadable(kind)


def _redirected(node: Any, via: str, out: _Found, outer: list[Redirect]) -> None:
    body = node.child_by_field_name("body")
    redirects = [_redirect(c, via, out) for c in node.children if c.type in _REDIRECTS]
    here = [r for r in redirects if r is not None]
    if body is None:  # a redirection alone (`> file`): it truncates the file
        part = Part("command", via)
        part.redirects = [*here, *outer]
        out.append(part)
        return
    if body.type not in ("list", "pipeline"):
        _statements(body, via, out, [*here, *outer])
        return
    # The parser hangs a trailing redirection on the whole list (`a && b > f`); the shell gives it to the last
    # command only.
    last = body.named_children[-1] if body.named_children else None
    for c in body.children:
        if c.type not in _INERT:
            _statements(c, _via_of(body.type, via), out, [*here, *outer] if c is last else outer)


def _assignment(node: Any, via: str, out: _Found, outer: list[Redirect]) -> None:
    part = Part("assignment", via)
    for c in node.named_children if node.type == "variable_assignments" else [node]:
        part.assigns.append(_word(c, via, out))
    part.redirects = list(outer)
    out.append(part)


def _declaration(node: Any, via: str, out: _Found, outer: list[Redirect]) -> None:
    part = Part("declaration", via)
    for c in node.children:
        part.words.append(_word(c, via, out))
    part.redirects = list(outer)
    out.append(part)


def _test(node: Any, via: str, out: _Found, outer: list[Redirect]) -> None:
    part = Part("test", via)
    for c in node.named_children:
        _substitutions(c, via, out)
    part.words.append(Word(_text(node), None))
    part.redirects = list(outer)
    out.append(part)


def _function(node: Any, via: str, out: _Found, outer: list[Redirect]) -> None:
    out.note("a function")
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if body is not None:
        _statements(body, f"function {_text(name) if name is not None else '?'}", out, [])


def _container(node: Any, via: str, out: _Found, outer: list[Redirect]) -> None:
    kind = node.type
    why = _UNCHECKED_CONTAINERS.get(kind)
    if why is not None and not (kind == "compound_statement" and via.startswith("function ")):
        out.note(why)
    for c in node.children:
        if c.type == "&":
            out.note("a command sent to the background (&)")
        if c.type in _CONTAINERS or c.type in _STATEMENT_KINDS:
            _statements(c, _via_of(kind, via), out, outer)
        elif c.type in _REDIRECTS:
            r = _redirect(c, via, out)
            if r is not None:  # a redirection on a loop or group: it applies to every command in it
                _apply(out, r)
        elif c.type not in _INERT:  # a loop's word list, a case's subject and patterns: only what they run matters
            _substitutions(c, via, out)


# Statements Claude Code will not let a rule allow even when every command in them is covered.
_UNCHECKED_CONTAINERS = {
    "subshell": "a subshell", "compound_statement": "a { ...; } group or (( )) arithmetic",
    "case_statement": "a case statement", "select_statement": "a select statement",
    "c_style_for_statement": "a C-style for loop",
}  # fmt: skip


_STATEMENT_KINDS = frozenset(
    {
        "command", "redirected_statement", "variable_assignment", "variable_assignments", "declaration_command",
        "unset_command", "test_command", "function_definition",
    }
)  # fmt: skip
_WORDISH = frozenset(
    {
        "word", "string", "raw_string", "number", "concatenation", "simple_expansion", "expansion",
        "command_substitution", "process_substitution", "ansi_c_string", "translated_string", "arithmetic_expansion",
        "brace_expression", "string_content", "special_variable_name", "extglob_pattern", "regex",
    }
)  # fmt: skip


def _via_of(kind: str, via: str) -> str:
    if kind == "pipeline":
        return "pipeline" if via == "chain" else via
    if kind == "subshell":
        return "subshell" if via == "chain" else via
    return via


def _apply(out: _Found, r: Redirect) -> None:
    if out:
        out[-1].redirects.append(r)


def _command(node: Any, via: str, out: _Found, outer: list[Redirect]) -> None:
    part = Part("command", via)
    mine = len(out)
    out.append(part)
    for c in node.children:
        t = c.type
        if t == "variable_assignment":
            part.assigns.append(_word(c, via, out))
        elif t == "command_name":
            inner = c.named_children
            if len(inner) != 1:
                raise _Unreadable("command_name")
            part.words.append(_word(inner[0], via, out))
        elif t in _REDIRECTS:
            r = _redirect(c, via, out)
            if r is not None:
                part.redirects.append(r)
        elif t in _INERT:
            continue
        elif t in _WORDISH:
            part.words.append(_word(c, via, out))
        else:
            raise _Unreadable(t)
    part.redirects.extend(outer)
    spanned = [c for c in node.children if c.type == "variable_assignment" or c.type == "command_name" or (
        c.type in _WORDISH)]  # fmt: skip
    if spanned:
        part.span = out.source[spanned[0].start_byte : spanned[-1].end_byte].decode("utf-8", "surrogatepass")
    # Substitutions were appended after this part: keep the command first, then what runs inside it.
    out[mine] = part


def _redirect(node: Any, via: str, out: _Found) -> Redirect | None:
    op = ""
    fd = None
    target: Word | None = None
    for c in node.children:
        t = c.type
        if t == "file_descriptor":
            fd = _text(c)
        elif t in ("heredoc_start", "heredoc_end", "heredoc_content"):
            continue
        elif t == "heredoc_body":  # an unquoted delimiter's body expands: what it runs is part of the command
            start = next((x for x in node.children if x.type == "heredoc_start"), None)
            quoted = start is not None and any(q in _text(start) for q in "'\"\\")
            if quoted:
                continue  # `<<'EOF'`: the body is text
            if any(ch in _text(c) for ch in "$`\\"):
                out.note("an unquoted here-document that expands")
            _substitutions(c, "here-document", out)
        elif not c.is_named:
            op = op or _text(c)
            if op in (">&-", "<&-"):
                out.note("a redirection that closes a descriptor")
        elif t in _WORDISH:
            if target is None:
                target = _word(c, via, out)
            else:
                _substitutions(c, via, out)
        else:
            raise _Unreadable(t)
    if node.type == "heredoc_redirect":
        return Redirect(op or "<<", fd, None)
    if node.type == "herestring_redirect":
        return Redirect("<<<", fd, None)
    return Redirect(op, fd, target)


def _substitutions(node: Any, via: str, out: _Found) -> None:
    """The commands a word runs when it expands (`$(...)`, backticks, `<(...)`), into `out`; what in it cannot be
    checked before it runs, into `out.notes`."""
    t = node.type
    if t in _WORD_NOTES:
        out.note(_WORD_NOTES[t])
    elif t == "simple_expansion":
        name = node.named_children[0] if node.named_children else None
        if name is None or name.type != "variable_name" or _text(name) not in SAFE_VARIABLES:
            out.note("a variable")
    elif t == "concatenation" and any(c.type == "word" and _text(c) == "{" for c in node.children):
        out.note("brace expansion")
    if t in _SUBSTITUTIONS:
        out.note(NESTED)
        for c in node.named_children:
            _statements(c, "substitution", out, [])
        return
    if node.type == "ERROR" or node.is_missing:
        raise _Unreadable(node.type)
    for c in node.children:
        _substitutions(c, via, out)


def _word(node: Any, via: str, out: _Found) -> Word:
    """A word's text, and its value where nothing in it expands; what it runs goes into `out`."""
    _substitutions(node, via, out)
    text = _text(node)
    value, glob = _value(node)
    return Word(text, value, glob)


def _value(node: Any) -> tuple[str | None, bool]:
    t = node.type
    if t in ("word", "number"):
        text = _text(node)
        return _unescape(text), _has_glob(text)
    if t == "raw_string":
        return _text(node)[1:-1], False
    if t == "string":
        pieces = []
        for c in node.named_children:
            if c.type != "string_content":
                return None, False
            pieces.append(_unescape_dq(_text(c)))
        return "".join(pieces), False
    if t == "concatenation":
        vals = []
        glob = False
        for c in node.named_children:
            v, g = _value(c)
            if v is None:
                return None, False
            vals.append(v)
            glob = glob or g
        return "".join(vals), glob
    if t == "variable_assignment":
        name = node.child_by_field_name("name")
        val = node.child_by_field_name("value")
        if val is None:
            return (_text(name) + "=" if name is not None else None), False
        v, _g = _value(val)
        return (None if v is None or name is None else f"{_text(name)}={v}"), False
    return None, False


def _has_glob(text: str) -> bool:
    esc = False
    for ch in text:
        if esc:
            esc = False
        elif ch == "\\":
            esc = True
        elif ch in GLOB_CHARS:
            return True
    return False


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _unescape_dq(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# How `_statements` reads each kind of statement (the containers and words aside).
_HANDLERS = {
    "command": _command,
    "redirected_statement": _redirected,
    "variable_assignment": _assignment, "variable_assignments": _assignment,
    "declaration_command": _declaration, "unset_command": _declaration,
    "test_command": _test,
    "function_definition": _function,
}  # fmt: skip
