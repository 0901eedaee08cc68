"""The permission rules: one engine for every door that decides whether a tool call may run.

* `engine`: rules in Claude Code's syntax, and `decide` (allow, deny or ask,
  with the rule and the reason);
* `shell`: a shell command read by a real parser into its simple commands;
* `commands`: what each simple command runs (wrappers stripped) and which
  files it names;
* `paths`: real paths, and path rules' patterns;
* `protected`: the files no rule may let a call change, and the secrets.

docs/guides/permissions.md states the semantics.  On the hook path: the
permission event loads the engine (and the parser, `parser`, only for a
command that is more than plain words: `shell.plain`); PreToolUse loads
`protected` and `paths` alone, for the file tools of a launched worker.
"""


class Unavailable(Exception):
    """The shell parser cannot be loaded here (not installed, or a binding that does not load): raised by
    `parser.parser()` and by `shell.parse` for a command that needs it."""
