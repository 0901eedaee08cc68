"""One module per agent runtime; the module's name is the runtime's name (`--runtime claude`).

`cocoplus.runtimes.registry` finds them by listing this directory, so a new
runtime is a new module here and nothing else (a module whose name begins
with `_` is not a runtime: `_defaults.py` holds what an adapter does where
its runtime offers nothing).  What every adapter defines, and what each
member means, is written on the protocol, `cocoplus.runtimes.protocol.Adapter`
(tests/runtimes/test_adapters.py checks every adapter has every member).
Standard library only: the hook imports the adapter named by `--runtime`
before every tool call, so an adapter imports at most
`cocoplus.runtimes.answers` and `_defaults` at module level.
"""
