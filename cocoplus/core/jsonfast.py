"""JSON for the hook path without `import json`.

`import json` pulls in `re`, `enum` and friends, which costs most of a bare
interpreter start (bench/hooks.py).  The C accelerator `_json` that the
json package itself uses needs none of that, so this module drives it
directly: the same parser and the same string encoder, strict (no NaN or
Infinity), falling back to the `json` package where `_json` is missing.  No
`from __future__` either: a launched worker's pre-tool check (hook/guard.py)
reads its payload with this module alone.
"""

import sys

try:
    import _json
except ImportError:  # pragma: no cover - every CPython ships _json
    _json = None  # type: ignore[assignment]

_WS = " \t\n\r"


class Truncated(ValueError):
    """The text ends before the JSON document does (a torn or cut-off write)."""


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


# What the scanner reads of a json.JSONDecoder, as a plain namespace (a module object: no class to make).
_Context = type(sys)("cocoplus.core.jsonfast.context")
_Context.__dict__.update(
    strict=True, object_hook=None, object_pairs_hook=None, parse_float=float, parse_int=int,
    parse_constant=_reject_constant, memo={},
)  # fmt: skip
_scanner = _json.make_scanner(_Context) if _json is not None else None  # type: ignore[arg-type]  # duck-typed like json.JSONDecoder


def loads(text: str) -> object:
    """Parse one JSON document; ValueError (with the position) if it is not one."""
    if _scanner is None:  # pragma: no cover
        import json  # deferred: a fallback, only where CPython has no _json

        return json.loads(text, parse_constant=_reject_constant)
    idx = len(text) - len(text.lstrip(_WS))
    try:
        obj, end = _scanner(text, idx)
    except StopIteration as exc:
        raise _error(text, "Expecting value", exc.value) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except SystemError:
        raise _locate(text, idx) from None
    except ValueError as exc:  # json.decoder.JSONDecodeError, when the json package is loaded
        raise _described(text, exc) from None
    finally:
        _Context.memo.clear()
    rest = len(text) - len(text.rstrip(_WS))
    if end != len(text) - rest:
        raise ValueError(f"Extra data: char {end}")
    return obj


def _error(text: str, msg: str, pos: int) -> ValueError:
    """The parser's complaint at `pos`, as Truncated when the document simply stops there."""
    end = len(text.rstrip(_WS))
    if pos >= end or msg.startswith("Unterminated string"):
        return Truncated(f"truncated: the JSON stops at char {end} before it is complete")
    return ValueError(f"{msg}: char {pos}")


def _described(text: str, exc: ValueError) -> ValueError:
    msg, pos = getattr(exc, "msg", None), getattr(exc, "pos", None)
    if isinstance(msg, str) and isinstance(pos, int):
        return _error(text, msg, pos)
    return ValueError(str(exc))


def _decode_error() -> type[ValueError]:
    """Stands in for json.decoder.JSONDecodeError while the json package is not loaded (see `_locate`); made on
    the first error only, since making a class costs every hook that imports this module."""
    global _DECODE_ERROR
    if _DECODE_ERROR is None:

        class DecodeError(ValueError):
            def __init__(self, msg: str, doc: str, pos: int) -> None:
                super().__init__(msg)
                self.msg = msg
                self.pos = pos

        _DECODE_ERROR = DecodeError
    return _DECODE_ERROR


_DECODE_ERROR: "type[ValueError] | None" = None


def _locate(text: str, idx: int) -> ValueError:
    """Parse again to learn what is wrong and where.

    The C scanner builds its error from `json.decoder.JSONDecodeError`,
    which it looks up among loaded modules only (CPython 3.11); with the
    json package not loaded (the hook path never loads it) it fails with a
    SystemError that says nothing.  For this one call it gets a stand-in.
    """
    if "json.decoder" in sys.modules:
        placeholder = None
    else:
        placeholder = type(sys)("json.decoder")
        placeholder.JSONDecodeError = _decode_error()  # type: ignore[attr-defined]
        sys.modules["json.decoder"] = placeholder
    try:
        _scanner(text, idx)
    except StopIteration as exc:
        return _error(text, "Expecting value", exc.value)
    except RecursionError:
        return ValueError("nested too deeply")
    except ValueError as exc:
        return _described(text, exc)
    except SystemError:
        return ValueError("not valid JSON")
    finally:
        _Context.memo.clear()
        if placeholder is not None and sys.modules.get("json.decoder") is placeholder:
            del sys.modules["json.decoder"]
    return ValueError("not valid JSON")


def _default(obj: object) -> object:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


if _json is not None:
    _encode = _json.make_encoder(None, _default, _json.encode_basestring, None, ": ", ", ", False, False, False)
    _encode_compact = _json.make_encoder(None, _default, _json.encode_basestring, None, ":", ",", False, False, False)
else:  # pragma: no cover
    _encode = _encode_compact = None


def dumps(obj: object, indent: "int | None" = None, compact: bool = False) -> str:
    """Serialise `obj`; `indent` gives json.dumps-style pretty output. NaN/Infinity raise ValueError."""
    if _encode is None:  # pragma: no cover
        import json  # deferred: a fallback, only where CPython has no _json

        seps = (",", ":") if compact else (", ", ": ")
        return json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=False, separators=None if indent else seps)
    if indent is None:
        return "".join((_encode_compact if compact else _encode)(obj, 0))
    return _pretty(obj, 0, indent)


def _pretty(obj: object, level: int, indent: int) -> str:
    if isinstance(obj, dict) and obj:
        inner = "\n" + " " * (indent * (level + 1))
        parts = []
        for k, v in obj.items():
            if not isinstance(k, str):
                k = "".join(_encode(k, 0)).strip('"')
            parts.append(inner + _json.encode_basestring(k) + ": " + _pretty(v, level + 1, indent))
        return "{" + ",".join(parts) + "\n" + " " * (indent * level) + "}"
    if isinstance(obj, (list, tuple)) and obj:
        inner = "\n" + " " * (indent * (level + 1))
        return "[" + ",".join(inner + _pretty(v, level + 1, indent) for v in obj) + "\n" + " " * (indent * level) + "]"
    return "".join(_encode(obj, 0))
