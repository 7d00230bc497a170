"""A stdio MCP server (written with the real SDK) whose one tool reports the env it sees.

Launched by tests/test_mcp_sdk.py through ``stdio_client``; never imported by the suite.
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("envscope-env-report")


@server.tool()
def environment() -> str:
    """The server's environment as JSON (test values only)."""
    return json.dumps(dict(os.environ), sort_keys=True)


if __name__ == "__main__":
    server.run("stdio")
