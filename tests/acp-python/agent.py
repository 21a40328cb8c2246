"""A scripted Agent Client Protocol agent for the runner's tests, written
with the official Python SDK (`agent-client-protocol`).

Its one turn: it comments on its task through the board's MCP server
offered in session/new, sends a plan, thinks, starts a tool call and asks
permission for it; allowed, it writes done.txt in its working directory
(the run's worktree), completes the plan, says what it did, and ends its
turn reporting its token usage. Rejected, it refuses; cancelled, it stops.
What it saw goes to $ACP_LOG/log.jsonl, its pid to $ACP_LOG/pid.
"""

import asyncio
import json
import os
import sys

from acp import (
    PROTOCOL_VERSION,
    plan_entry,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
    Usage,
)

LOG = os.environ["ACP_LOG"]


def log(event, **data):
    with open(os.path.join(LOG, "log.jsonl"), "a") as f:
        f.write(json.dumps({"event": event, **data}) + "\n")


async def mcp_comment(server, task, content):
    """Calls the `comment` tool of the offered MCP server over stdio;
    answers the tools it lists."""
    env = dict(os.environ)
    env.update({e.name: e.value for e in server.env})
    proc = await asyncio.create_subprocess_exec(
        server.command, *server.args, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )

    async def send(message):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        await proc.stdin.drain()

    async def answer(id):
        while True:
            line = await proc.stdout.readline()
            if not line:
                raise RuntimeError("the MCP server closed its output")
            message = json.loads(line)
            if message.get("id") == id:
                if "error" in message:
                    raise RuntimeError(f"MCP error: {message['error']}")
                return message["result"]

    await send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "acp-test-agent", "version": "1"}}})
    await answer(1)
    await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    await send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = [t["name"] for t in (await answer(2))["tools"]]
    await send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "comment", "arguments": {"task": task, "content": content}}})
    result = await answer(3)
    proc.stdin.close()
    await proc.wait()
    if result.get("isError"):
        raise RuntimeError(f"the comment tool failed: {result}")
    return tools


class ScriptedAgent:
    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        caps = client_capabilities.model_dump(by_alias=True, exclude_none=True) if client_capabilities else None
        log("initialize", protocol_version=protocol_version, client_capabilities=caps,
            client=client_info.name if client_info else None)
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd, mcp_servers=None, **kwargs):
        self.cwd = cwd
        self.servers = list(mcp_servers or [])
        log("new_session", cwd=cwd, mcp_servers=[
            {"name": s.name, "command": s.command, "args": s.args, "env": sorted(e.name for e in s.env)}
            for s in self.servers])
        return NewSessionResponse(session_id="session-1")

    async def cancel(self, session_id, **kwargs):
        log("cancel", session_id=session_id)

    async def prompt(self, session_id, prompt, **kwargs):
        text = "".join(getattr(block, "text", "") for block in prompt)
        log("prompt", text=text, cwd=os.getcwd())
        say = self.conn.session_update
        if os.environ.get("TASKBOARD_MESSAGE"):
            # Answering a message: a thought, a plan, and the answer.
            await say(session_id, update_agent_thought_text("Looking for what is asked about."))
            await say(session_id, update_plan([plan_entry("Answer the question", status="in_progress")]))
            word = next((w.strip("?.,") for w in text.split() if w.startswith("ping-")), "nothing")
            await say(session_id, update_agent_message_text(f"You asked about {word}."))
            return PromptResponse(stop_reason="end_turn")
        task = os.environ["TASKBOARD_TASK"]
        tools = await mcp_comment(self.servers[0], task, f"Starting on {task}, through the board's MCP server.")
        log("mcp", tools=tools)
        await say(session_id, update_plan([
            plan_entry("Read the task", status="completed"),
            plan_entry("Write done.txt", status="in_progress"),
            plan_entry("Report what was done"),
        ]))
        await say(session_id, update_agent_thought_text("The task asks for done.txt; "))
        await say(session_id, update_agent_thought_text("I need permission to write it."))
        await say(session_id, start_tool_call("write-1", "Write done.txt", kind="edit", status="pending"))
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="write-1", title="Write done.txt"),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        log("permission", outcome=outcome.outcome, option_id=getattr(outcome, "option_id", None))
        if outcome.outcome == "cancelled":
            return PromptResponse(stop_reason="cancelled")
        if outcome.option_id != "allow":
            await say(session_id, update_tool_call("write-1", status="failed"))
            return PromptResponse(stop_reason="refusal")
        with open(os.path.join(self.cwd, "done.txt"), "w") as f:
            f.write("done\n")
        await say(session_id, update_tool_call("write-1", status="completed"))
        await say(session_id, update_plan([
            plan_entry("Read the task", status="completed"),
            plan_entry("Write done.txt", status="completed"),
            plan_entry("Report what was done", status="completed"),
        ]))
        await say(session_id, update_agent_message_text("Wrote done.txt "))
        await say(session_id, update_agent_message_text("in the worktree."))
        usage = Usage(total_tokens=165, input_tokens=120, output_tokens=45)
        return PromptResponse(stop_reason="end_turn", usage=usage)


async def main():
    with open(os.path.join(LOG, "pid"), "w") as f:
        f.write(f"{os.getpid()}\n")
    await run_agent(ScriptedAgent())


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # noqa: BLE001
        log("error", error=repr(e))
        print(f"agent: {e!r}", file=sys.stderr)
        sys.exit(1)
