"""The agent runtimes cocoplus wires into: one adapter module each (`adapters/`), a registry, and install.

`registry` finds and loads adapters; `answers` holds hook-answer shapes
several runtimes share; `install` wires hooks, the `/supervise` command and
the MCP server (`mcp_config`) into a project, through `files`.  Standard
library only.  This file imports nothing: the hook loads the package before
every tool call.
"""
