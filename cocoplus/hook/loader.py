"""How a hook process imports cocoplus' own modules past the fast path: straight from their cached byte code.

The standard import of one small module costs a hook more than the module's
own code: the path finder tries four file names in the package's directory,
builds a spec from the file's location, then the source loader finds, reads
and checks the cached byte code, all of it in Python.  A hook past the fast
path imports forty-odd of cocoplus' modules (the permission event about
fifty), and that machinery was a third of what the event cost beyond the
interpreter's own start.

`install()` puts a finder first in `sys.meta_path` for the modules below the
`cocoplus` package: one `stat` of the source, one read of its cached byte
code beside it (`__pycache__/NAME.<tag>.pyc`), checked as the standard loader
checks it (the interpreter's magic number, a timestamp-based cache whose
recorded modification time and size are the source's).  When anything does
not hold (no cache yet, a stale or hash-based one, a package directory or a
namespace, `-O`, a cache prefix), it answers nothing and the standard finders
import the module as they always do, writing its cache.  The module is then
what the standard import would have made: the same `__file__`, `__cached__`,
`__path__` for a package, and the same code.

`preload(names)` goes further for the modules a step is known to import
(`RUNNER`: the runner and everything it imports; `IDENTITY` and `RULES`: what
a permission request asks who it is for, and what decides it by the rules):
each is made and run here in turn, in an order where every module comes after
the ones it imports, with none of the import machinery's locking and search
around it, which costs about as much again as the finder.  What a module
then imports is found loaded; a name the finder leaves to the standard import
is imported the standard way.  The lists name the standard library's
extension modules the steps import too (`_json`, `fcntl`, `_sha256`): those
are loaded from the interpreter's `lib-dynload` by its own extension loader,
without the path finder listing the standard library's directories to find
them.  tests/hook/test_loader.py holds the lists to what the events really
import, and to that order.

Only the hook's own process installs it (`entry.script`, past the fast path:
the events around every tool call import too few modules for it to pay).
Standard library only, and no module of it that the interpreter has not
loaded already.
"""

import posix
import sys
from marshal import loads

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path: annotations are strings
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

# The interpreter's own import machinery, loaded before any module (nothing to import).
_bootstrap = sys.modules["_frozen_importlib"]
_external = sys.modules["_frozen_importlib_external"]
PREFIX = "cocoplus."
HEADER = 16  # magic number, flags, source modification time, source size

# What a step imports that the fast path has not, each module after the ones it imports (`preload`).
# The runner and its imports: every event past the fast path (hook/entry.py).
RUNNER = (
    "cocoplus.core", "cocoplus.core.clock", "_json", "cocoplus.core.jsonfast", "cocoplus.core.errors",
    "cocoplus.core.roots", "fcntl", "cocoplus.core.lock", "cocoplus.core.fsio", "cocoplus.core.paths",
    "cocoplus.session", "cocoplus.core.vocab", "cocoplus.core.records", "cocoplus.session.killswitch",
    "cocoplus.session.registry", "cocoplus.hook.runner",
)  # fmt: skip
# Who a permission request is for (hook/permission.py, for a runtime that asks through the hook).
IDENTITY = (
    "cocoplus.core.userfiles",
    "_sha256",
    "cocoplus.core.seal",
    "cocoplus.session.procinfo",
    "cocoplus.session.identity",
)
# What decides a headless request by the rules (hook/permission.py); the shell parser only when a command needs it.
RULES = (
    "cocoplus.core.jsonl", "cocoplus.rules", "cocoplus.rules.engine", "cocoplus.session.permissions",
    "cocoplus.core.hookconfig", "cocoplus.session.values", "cocoplus.rules.shell", "cocoplus.rules.paths",
    "cocoplus.rules.protected", "cocoplus.rules.commands",
)  # fmt: skip


class Finder:
    """A `sys.meta_path` finder (and loader) for `cocoplus.*` modules with a current timestamp-based cache.

    Which file a name means is decided as the standard path finder decides it, from one listing of each package
    directory: a package directory (with its `__init__.py`) before an extension module, an extension module before
    a source file.  Only a package or a source file with a current cache is imported here."""

    def __init__(self) -> None:
        self.magic = _external.MAGIC_NUMBER
        self.tag = sys.implementation.cache_tag
        self.extensions = tuple(_external.EXTENSION_SUFFIXES)
        self.listed: dict[str, set[str]] = {}

    def names(self, directory: "str") -> "set[str]":
        """The names in `directory` (none when it cannot be listed), listed once."""
        names = self.listed.get(directory)
        if names is None:
            try:
                names = set(posix.listdir(directory))
            except (OSError, ValueError):
                names = set()
            self.listed[directory] = names
        return names

    def find_spec(self, name: "str", path: "Sequence[str] | None" = None, target: "Any" = None) -> "Any":
        if path is None or len(path) != 1 or not name.startswith(PREFIX):
            return None
        directory = path[0]
        leaf = name.rpartition(".")[2]
        names = self.names(directory)
        if leaf in names:  # a package (or a namespace, or something else: the standard finders decide those)
            directory = f"{directory}/{leaf}"
            names, leaf = self.names(directory), "__init__"
            if "__init__.py" not in names:
                return None
        if f"{leaf}.py" not in names or any(leaf + suffix in names for suffix in self.extensions):
            return None
        source = f"{directory}/{leaf}.py"
        cached = f"{directory}/__pycache__/{leaf}.{self.tag}.pyc"
        data = self.current(source, cached)
        if data is None:
            return None
        package = leaf == "__init__"
        spec = _bootstrap.ModuleSpec(name, self, origin=source, loader_state=data, is_package=package)
        spec.has_location = True
        spec.cached = cached
        if package:
            spec.submodule_search_locations.append(directory)
        return spec

    def current(self, source: "str", cached: "str") -> "bytes | None":
        """The cached byte code of `source`, when it is current (as the standard loader checks it); else None."""
        try:
            st = posix.stat(source)
            fd = posix.open(cached, posix.O_RDONLY | posix.O_CLOEXEC)
        except (OSError, ValueError):
            return None
        chunks = []
        try:
            while chunk := posix.read(fd, 1 << 20):
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            posix.close(fd)
        data = b"".join(chunks)
        if (
            len(data) < HEADER
            or data[:4] != self.magic
            or data[4:8] != b"\0\0\0\0"  # timestamp-based (a hash-based cache is left to the standard loader)
            or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
            or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF
        ):
            return None
        return data

    def create_module(self, spec: "Any") -> "None":
        return None  # the default module

    def exec_module(self, module: "ModuleType") -> "None":
        spec: Any = module.__spec__  # the spec find_spec gave
        data, spec.loader_state = spec.loader_state, None
        exec(loads(memoryview(data)[HEADER:]), module.__dict__)


def install() -> "None":
    """Put the finder first in `sys.meta_path`, unless the byte code this interpreter reads lives elsewhere (`-O`,
    a cache prefix) or it is there already."""
    if sys.flags.optimize or sys.pycache_prefix is not None:
        return
    if _installed() is None:
        sys.meta_path.insert(0, Finder())
    if "__future__" not in sys.modules:
        sys.modules["__future__"] = _future()


def _future() -> "ModuleType":
    """What `from __future__ import annotations` imports at run time, without the standard library's `__future__`.

    The statement is a directive to the compiler, but its byte code still imports the module and reads the name;
    nearly every cocoplus module has it, and the first one loaded made the hook find, read and run the standard
    library's `__future__` (its first source module: about a fiftieth of the interpreter's floor, bench/hooks.py
    --instructions).  This stand-in has `annotations`; any other name, or any attribute of that one, loads the
    real module in its place."""
    module: Any = type(sys)("__future__")
    feature: Any = type(sys)("__future__.annotations")  # a module, not a class: a class costs a hook its making
    feature.__getattr__ = lambda name: _future_name(name, "annotations")
    module.annotations = feature
    module.__getattr__ = _future_name
    return module


def _future_name(name: "str", feature: "str | None" = None) -> "Any":
    """`name` of the real `__future__` (of its `feature`, where given), loaded in the stand-in's place."""
    if name.startswith("__"):  # the import system asks for `__path__` and the like: a plain module has none
        raise AttributeError(name)
    real = _real_future()
    return getattr(getattr(real, feature) if feature else real, name)


def _real_future() -> "ModuleType":
    loaded = sys.modules.get("__future__")
    if loaded is not None and getattr(loaded, "__file__", None):  # the real one, loaded already
        return loaded
    stand_in = sys.modules.pop("__future__", None)
    try:
        import __future__  # deferred: only when something reads more than the name `annotations`
    except BaseException:
        if stand_in is not None:
            sys.modules["__future__"] = stand_in
        raise
    return __future__


def _extension(name: "str") -> "None":
    """Load the standard library's extension module `name` from the interpreter's `lib-dynload`, where the path
    finder would find it after listing the standard library's directory and that one; where it is not there (a
    build with the module built in, or without it), leave it to the standard import."""
    dynload = next((d for d in sys.path if d.endswith("/lib-dynload")), None)
    if dynload is None:
        return
    path = f"{dynload}/{name}{_external.EXTENSION_SUFFIXES[0]}"
    try:
        posix.stat(path)
    except (OSError, ValueError):
        return
    loader = _external.ExtensionFileLoader(name, path)
    spec = _bootstrap.ModuleSpec(name, loader, origin=path)
    spec.has_location = True
    module = _bootstrap.module_from_spec(spec)
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


def _installed() -> "Finder | None":
    return next((f for f in sys.meta_path if isinstance(f, Finder)), None)


def preload(names: "Sequence[str]") -> "None":
    """Import the modules `names`, in this order, as the finder would, without the import machinery around it
    (each must come after the modules it imports, its package first).  Nothing without the finder installed (a
    process other than the hook's own); a module imported already is left as it is; one the finder leaves to the
    standard import is imported the standard way."""
    finder = _installed()
    if finder is None:
        return
    modules = sys.modules
    for name in names:
        if name in modules:
            continue
        if not name.startswith(PREFIX):
            _extension(name)
            continue
        parent_name, _, leaf = name.rpartition(".")
        parent = modules.get(parent_name)
        spec = finder.find_spec(name, getattr(parent, "__path__", None))
        if spec is None:
            __import__(name)
            continue
        module: Any = type(sys)(name)
        module.__spec__ = spec
        module.__loader__ = finder
        module.__file__ = spec.origin
        module.__cached__ = spec.cached
        if spec.submodule_search_locations is None:
            module.__package__ = parent_name
        else:
            module.__package__ = name
            module.__path__ = spec.submodule_search_locations
        modules[name] = module
        try:
            finder.exec_module(module)
        except BaseException:
            modules.pop(name, None)
            raise
        setattr(parent, leaf, modules[name])
