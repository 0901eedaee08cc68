"""The fleet relay: this project's door to the fleet, beside the server and the MCP server.

`service` runs it (`cocoplus relay run`, one per project): it mirrors
`.cocoplus/` to the fleet (`snapshot` for the state, `outbox` for the
logs) and applies the commands addressed to this project (`apply`), each
through the same operation of `cocoplus.ops` the CLI calls.  The wire
format and the connection are `cocoplus.fleet`'s; the relay as a process
(start, status, stop) is `cocoplus.fleet.process`.
"""
