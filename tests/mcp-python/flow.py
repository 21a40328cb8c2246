"""The board's MCP server through the official Python SDK (`mcp`), an
independent client: over Streamable HTTP against the server's /mcp and over
stdio against `taskboard mcp`. Lists the tools and checks their schemas,
works a task through the whole loop as an agent (every answer validated
against its tool's output schema by the SDK), takes a taken task (a tool
error with the 409's detail), reads a task resource and hears of a change
to it, then checks the board through the REST API.
Usage: flow.py BASE_URL OWNER_PASSWORD TASKBOARD_BIN"""
import asyncio
import json
import sys
import urllib.request

from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

base, password, taskboard = sys.argv[1], sys.argv[2], sys.argv[3]
TOOLS = ["whoami", "list_projects", "list_members", "search_tasks", "get_task", "ready_tasks", "claim_task",
         "take_task", "heartbeat", "release_task", "reject_task", "create_task", "update_task", "add_step",
         "complete_step", "comment", "read_comments", "post_chat", "read_chat", "wait_for_events", "get_changes",
         "get_reviews", "review_submit"]


def rest(method, path, body=None, token=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req) as res:
        text = res.read()
        return json.loads(text) if text else None


owner = rest("POST", "/api/v1/auth/login", {"login": "owner", "password": password})["token"]
project = rest("POST", "/api/v1/projects", {"name": "Python", "slug": "py"}, owner)
agents = {}
for slug in ["py-agent", "py-other"]:
    member = rest("POST", "/api/v1/members", {"name": slug, "slug": slug, "type": "agent"}, owner)
    rest("POST", f"/api/v1/projects/{project['id']}/members", {"member_id": member["id"]}, owner)
    agents[slug] = member["token"]
task = rest("POST", f"/api/v1/tasks?project_id={project['id']}", {"title": "Python loop", "status": "todo"}, owner)
key = task["key"]


def structured(result, tool):
    assert not result.is_error, f"{tool}: {result.content}"
    assert result.content and result.content[0].text, f"{tool}: no text"
    return result.structured_content


async def over_http():
    updated = asyncio.Queue()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/resources/updated":
            await updated.put(message.params.uri)

    def client(token):
        return streamable_http_client(base + "/mcp", http_client=create_mcp_http_client(
            headers={"Authorization": f"Bearer {token}"}))

    async with client(agents["py-agent"]) as (read, write), ClientSession(read, write, message_handler=on_message) as s:
        init = await s.initialize()
        print(f"python mcp: negotiated {init.protocol_version}")
        tools = (await s.list_tools()).tools
        assert [t.name for t in tools] == TOOLS, [t.name for t in tools]
        for t in tools:
            Draft202012Validator.check_schema(t.input_schema)
            Draft202012Validator.check_schema(t.output_schema)
            assert t.input_schema["type"] == "object" and t.output_schema["type"] == "object", t.name
        listed = json.dumps({"tools": [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]})
        print(f"python mcp: tools/list as the SDK re-serialises it: {len(listed)} bytes, about {len(listed) // 4} tokens")

        ready = structured(await s.call_tool("ready_tasks", {"project": "py"}), "ready_tasks")
        assert ready["tasks"][0]["key"] == key, ready
        claimed = structured(await s.call_tool("claim_task", {"project": "py", "lease_seconds": 60}), "claim_task")
        assert claimed["task"]["key"] == key and claimed["task"]["status"] == "in_progress", claimed
        structured(await s.call_tool("heartbeat", {"task": key, "lease_seconds": 120}), "heartbeat")
        structured(await s.call_tool("add_step", {"task": key, "title": "write it"}), "add_step")
        step = structured(await s.call_tool("complete_step", {"task": key, "step": 1}), "complete_step")
        assert step["step"]["done"] is True, step
        structured(await s.call_tool("comment", {"task": key, "content": "written in Python"}), "comment")
        done = structured(await s.call_tool("update_task", {"task": key, "status": "review"}), "update_task")
        assert done["task"]["status"] == "review", done

        uri = f"taskboard://tasks/{key}"
        text = (await s.read_resource(uri)).contents[0].text
        assert text.startswith(f"# {key} Python loop"), text
        await s.subscribe_resource(uri)
        rest("PATCH", f"/api/v1/tasks/{task['id']}", {"priority": "urgent"}, owner)
        told = await asyncio.wait_for(updated.get(), 30)
        assert told == uri, told

    async with client(agents["py-other"]) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        refused = await s.call_tool("take_task", {"task": key})
        assert refused.is_error, refused
        assert refused.content[0].text.startswith("409 conflict: "), refused.content[0].text


async def over_stdio():
    env = {"TASKBOARD_SERVER": base, "TASKBOARD_TOKEN": agents["py-other"], "PATH": "/usr/bin:/bin"}
    params = StdioServerParameters(command=taskboard, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        assert len((await s.list_tools()).tools) == len(TOOLS)
        me = structured(await s.call_tool("whoami", {}), "whoami")
        assert me["member"]["slug"] == "py-other", me
        got = structured(await s.call_tool("get_task", {"task": key}), "get_task")
        assert got["task"]["status"] == "review" and got["comments"], got


asyncio.run(over_http())
asyncio.run(over_stdio())
seen = rest("GET", f"/api/v1/tasks/{task['id']}", token=owner)
assert seen["status"] == "review" and seen["assignee"]["slug"] == "py-agent", seen
assert seen["steps"][0]["done"] is True and seen["priority"] == "urgent", seen
print(f"python mcp: {key} worked through the loop by py-agent over HTTP and read over stdio")
