"""Drives driftwatch's MCP server with the official MCP Python SDK (`mcp` on PyPI).

Usage: client.py <url> <token> (Streamable HTTP at <url>), or
client.py --stdio <driftwatch binary> <server url> <token> (`driftwatch mcp` as a
subprocess, the way a desktop agent runs it), with a JSON plan on stdin; or
client.py --listen|--subscribe <url> <token> <resource uri>, or --stdio-listen <binary>
<server url> <token> <resource uri>: prints READY once subscribed, then the update
notification as JSON. Plans:
    [["list_tools"], ["call", "create_watch", {"url": "..."}], ["list_resources"],
     ["read_resource", "driftwatch://watches/wat_..."], ...]
Prints one JSON list: per step, the tool names, a call's {"is_error", "structured", "text"},
the resource URIs, or a resource's {"text"}. A protocol failure prints
{"protocol_error": "..."} for that step, and the plan goes on.
"""

import asyncio
import json
import sys
import warnings

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
                elif step[0] == "list_prompts":
                    listed = await client.list_prompts()
                    out.append(sorted(p.name for p in listed.prompts))
                elif step[0] == "get_prompt":
                    got = await client.get_prompt(step[1], step[2])
                    out.append({"text": got.messages[0].content.text})
                elif step[0] == "read_resource":
                    read = await client.read_resource(step[1])
                    out.append({"text": read.contents[0].text})
                else:
                    out.append({"protocol_error": f"unknown step {step[0]}"})
            except Exception as e:  # noqa: BLE001 - reported to the test, which decides
                out.append({"protocol_error": f"{type(e).__name__}: {e}"})
    return out


async def wait_for_update(server, uri: str, legacy: bool) -> dict:
    """Subscribes to `uri`, prints READY, then waits for its update notification: with
    `subscriptions/listen` (2026-07-28), or with the session's `resources/subscribe` (legacy),
    whose raw notification shows its `_meta`."""
    if legacy:
        got: asyncio.Queue = asyncio.Queue()

        async def handler(message) -> None:
            if getattr(message, "method", "") == "notifications/resources/updated":
                await got.put(message.params.model_dump(by_alias=True, mode="json"))

        async with Client(server, mode="legacy", message_handler=handler) as client:
            with warnings.catch_warnings():
                # Deliberately the pre-2026-07-28 way: the server serves both.
                warnings.simplefilter("ignore")
                await client.session.subscribe_resource(uri)
            print("READY", flush=True)
            params = await asyncio.wait_for(got.get(), 30)
            return {"protocol": client.protocol_version, "uri": params.get("uri"), "meta": params.get("_meta")}
    async with Client(server) as client:
        async with client.listen(resource_subscriptions=[uri]) as sub:
            print("READY", flush=True)
            async with asyncio.timeout(30):
                async for event in sub:
                    return {"protocol": client.protocol_version, "uri": event.uri}
    return {"protocol_error": "the subscription ended"}


def main() -> None:
    if sys.argv[1] in ("--listen", "--subscribe"):
        url, token, uri = sys.argv[2], sys.argv[3], sys.argv[4]
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        server = streamable_http_client(url, http_client=http)
        print(json.dumps(asyncio.run(wait_for_update(server, uri, sys.argv[1] == "--subscribe"))))
        return
    if sys.argv[1] == "--stdio-listen":
        binary, url, token, uri = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
        server = StdioServerParameters(
            command=binary, args=["mcp"], env={"DRIFTWATCH_URL": url, "DRIFTWATCH_TOKEN": token}
        )
        print(json.dumps(asyncio.run(wait_for_update(server, uri, False))))
        return
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
