"""The bash parser (tree-sitter's bash grammar), loaded on first use and never at import.

The permission event is the only hook event that parses a command, and only
one that is more than plain words (`shell.plain` reads those); PreToolUse
never imports this module.  The two extension modules are loaded straight from
their files (`_fast_load`): the packages' `__init__` would import `typing`,
`importlib.resources` and `re`, about four times what parsing costs; the
binding's own start-up asks for three standard-library names it only uses for
queries and for `Point` (which the rules never call), and is given light
stand-ins for them while it starts.  If that fast load fails (another version
of the binding), the ordinary import is used; if neither can be had, `parser`
raises `Unavailable` and every command is asked (`cocoplus doctor` says so).
Standard library only besides the parser itself.
"""

from __future__ import annotations

import os
import sys

from cocoplus.rules import Unavailable

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

_PARSER: Any = None


def _stand_ins() -> dict[str, Any]:
    """Light stand-ins for what the binding's start-up asks of `re`, `enum` and `collections` (it keeps
    `re.compile` for query predicates, makes the enum `LogType` and the named tuple `Point`)."""

    def compile(*args: Any, **kwargs: Any) -> Any:
        import re  # deferred: only a query predicate (the rules use none) compiles a pattern

        return re.compile(*args, **kwargs)

    def IntEnum(*args: Any, **kwargs: Any) -> None:  # the name the binding asks for
        return None

    def namedtuple(name: str, fields: Any, **kwargs: Any) -> Any:
        return type(name, (tuple,), {"__module__": kwargs.get("module") or "tree_sitter"})

    out: dict[str, Any] = {}
    for name, attrs in (("re", {"compile": compile}), ("enum", {"IntEnum": IntEnum}),
                        ("collections", {"namedtuple": namedtuple})):  # fmt: skip
        if name not in sys.modules:  # a module holding the few names the binding asks for, nothing else
            stub = out[name] = type(sys)(name)
            stub.__dict__.update(attrs)
    return out


def _search_dirs() -> list[str]:
    """Where the parser's packages may be installed: beside cocoplus (a normal install), then this interpreter's
    site-packages (an editable install; the hook runs without `site`)."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ver = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    out = [here, *sys.path]
    # Without `site` (the hook runs `python -S`), `sys.prefix` is the base interpreter's, not the virtual
    # environment's: the environment is where `sys.executable` lives, marked by its `pyvenv.cfg`.
    venv = os.path.dirname(os.path.dirname(sys.executable or ""))
    prefixes = [venv] if venv and os.path.exists(os.path.join(venv, "pyvenv.cfg")) else []
    for prefix in (*prefixes, sys.prefix, sys.exec_prefix):
        for lib in ("lib", "lib64"):
            out.append(os.path.join(prefix, lib, ver, "site-packages"))
    seen: set[str] = set()
    return [d for d in out if d and not (d in seen or seen.add(d))]  # type: ignore[func-returns-value]


def _extension(pkg: str, dirs: list[str]) -> str | None:
    for d in dirs:
        folder = os.path.join(d, pkg)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for n in names:
            if n.startswith("_binding.") and n.endswith(".so"):
                return os.path.join(folder, n)
    return None


def _spec(name: str, origin: str) -> Any:
    """A module spec for `_imp.create_dynamic`, which reads its name and file (the import system's own class:
    one made here would cost the hook its making)."""
    return sys.modules["_frozen_importlib"].ModuleSpec(name, None, origin=origin)


def _fast_load() -> Any:
    import _imp  # deferred: the interpreter's own loader of extension modules (built in: nothing to load)

    dirs = _search_dirs()
    core, grammar = _extension("tree_sitter", dirs), _extension("tree_sitter_bash", dirs)
    if core is None or grammar is None:
        raise ImportError("tree-sitter or tree-sitter-bash is not installed")
    stubs = _stand_ins()
    sys.modules.update(stubs)
    try:
        ts = _imp.create_dynamic(_spec("tree_sitter._binding", core))
        _imp.exec_dynamic(ts)
    finally:
        for name, mod in stubs.items():
            if sys.modules.get(name) is mod:
                del sys.modules[name]
    bash = _imp.create_dynamic(_spec("tree_sitter_bash._binding", grammar))
    _imp.exec_dynamic(bash)
    return ts.Parser(ts.Language(bash.language()))


def _ordinary_load() -> Any:
    import tree_sitter  # deferred: the parser, only where a command is parsed
    import tree_sitter_bash  # deferred: as tree_sitter

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parser() -> Any:
    """The bash parser (loaded once); `Unavailable` when it cannot be had."""
    global _PARSER
    if _PARSER is None:
        try:
            _PARSER = _fast_load()
        except Exception:  # noqa: BLE001 - any failure of the fast path falls back to the ordinary import
            try:
                _PARSER = _ordinary_load()
            except Exception as exc:  # noqa: BLE001
                raise Unavailable(f"the shell parser cannot be loaded ({type(exc).__name__}: {exc})") from None
    return _PARSER


def available() -> str | None:
    """None when the parser loads; otherwise why not (doctor)."""
    try:
        parser()
    except Unavailable as exc:
        return str(exc)
    return None
