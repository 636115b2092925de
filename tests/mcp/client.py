"""Drives driftwatch's MCP server with the official MCP Python SDK (`mcp` on PyPI).

Usage: client.py <url> <token> (Streamable HTTP at <url>), or
client.py --stdio <driftwatch binary> <server url> <token> (`driftwatch mcp` as a
subprocess, the way a desktop agent runs it), with a JSON plan on stdin:
    [["list_tools"], ["call", "create_watch", {"url": "..."}], ["list_resources"],
     ["read_resource", "driftwatch://watches/wat_..."], ...]
Prints one JSON list: per step, the tool names, a call's {"is_error", "structured", "text"},
the resource URIs, or a resource's {"text"}. A protocol failure prints
{"protocol_error": "..."} for that step, and the plan goes on.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def run(server, plan: list) -> list:
    out = []
    async with Client(server) as client:
        for step in plan:
            try:
                if step[0] == "list_tools":
                    listed = await client.list_tools()
                    out.append(sorted(t.name for t in listed.tools))
                elif step[0] == "call":
                    result = await client.call_tool(step[1], step[2])
                    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
                    out.append(
                        {
                            "is_error": bool(result.is_error),
                            "structured": result.structured_content,
                            "text": texts[0] if texts else "",
                        }
                    )
                elif step[0] == "list_resources":
                    listed = await client.list_resources()
                    out.append(sorted(str(r.uri) for r in listed.resources))
                elif step[0] == "read_resource":
                    read = await client.read_resource(step[1])
                    out.append({"text": read.contents[0].text})
                else:
                    out.append({"protocol_error": f"unknown step {step[0]}"})
            except Exception as e:  # noqa: BLE001 - reported to the test, which decides
                out.append({"protocol_error": f"{type(e).__name__}: {e}"})
    return out


def main() -> None:
    if sys.argv[1] == "--stdio":
        binary, url, token = sys.argv[2], sys.argv[3], sys.argv[4]
        server = StdioServerParameters(
            command=binary, args=["mcp"], env={"DRIFTWATCH_URL": url, "DRIFTWATCH_TOKEN": token}
        )
    else:
        url, token = sys.argv[1], sys.argv[2]
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        server = streamable_http_client(url, http_client=http)
    plan = json.load(sys.stdin)
    print(json.dumps(asyncio.run(run(server, plan))))


if __name__ == "__main__":
    main()
