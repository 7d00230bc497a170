"""Launch tests/mcp_env_server.py through the real MCP SDK and read back the env it saw."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from mcp import ClientSession, stdio_client
from mcp_types import TextContent

if TYPE_CHECKING:
    from mcp.client.stdio import StdioServerParameters

SERVER = str(Path(__file__).resolve().parent / "mcp_env_server.py")
TIMEOUT_S = 60  # a bound, not a timing assertion: a hung server fails the test instead of CI

# The environment every real-SDK test runs under (os.environ is replaced by it): the
# SDK's defaults, a locale (so the server's Python adds no LC_CTYPE) and host secrets.
PARENT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/home/operator",
    "USER": "operator",
    "LOGNAME": "operator",
    "SHELL": "/bin/sh",
    "TERM": "xterm",
    "LANG": "C.UTF-8",
    "EDITOR": "vi",
    "TELEGRAM_BOT_TOKEN": "fake-telegram-bot-token-0000",
    "OPENAI_API_KEY": "sk-fake-openai-key-000000000",
    "GITHUB_TOKEN": "ghp_host0000000000000000000000",
    "AWS_SECRET_ACCESS_KEY": "fake-aws-secret-access-key-0",
    "DATABASE_URL": "postgres://u:pw@db/app",
}
SAFE_KEYS = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG"}


def server_command() -> tuple[str, list[str]]:
    """The command and arguments that start the test server with this interpreter."""
    return sys.executable, [SERVER]


async def _environment(params: StdioServerParameters) -> dict[str, str]:
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("environment", {})
    content = result.content[0]
    assert isinstance(content, TextContent)
    env: dict[str, str] = json.loads(content.text)
    return env


def server_environments(*params: StdioServerParameters) -> list[dict[str, str]]:
    """The env each server saw, the servers launched concurrently through the real SDK."""

    async def all_of() -> list[dict[str, str]]:
        return list(await asyncio.gather(*(_environment(p) for p in params)))

    return asyncio.run(all_of())
