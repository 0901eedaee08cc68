"""What cocoplus writes into agent runtimes, and reads back to check it.

`hooks`: `cocoplus install|uninstall RUNTIME`, the per-user pointer, and
`doctor`'s view of what is wired; `wiring`: the one source of every hook
entry, MCP server entry and `/supervise` command; `launcher`: the two forms
of a hook command; `bundles`: the agent plugins and extensions, built from
the same declarations; `mcp_config` and `files`: merging cocoplus' entries
into the runtime's own files.  What each runtime is and how it speaks is
`cocoplus.runtimes`' (its adapters); the timeouts written beside each hook
are `cocoplus.hook.timeouts`' (the hook reads them back).
"""
