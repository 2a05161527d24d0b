"""`piton acp` driven by the protocol's official TypeScript client (`@agentclientprotocol/sdk`,
installed from npm at the version below), where Node is present: an editor written against the
other SDK sees the same turn over a real pipe, against the fake Messages API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import Thinking, ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import PITON, node_said, npm_installed

# the last release with `ClientSideConnection`: 2.0 removed it for the `client()` app API
SDK = "@agentclientprotocol/sdk@1.9.0"

# An editor in a few lines: starts `piton acp`, runs one turn, allows what it is asked once, and
# prints what it saw as one line of JSON.
EDITOR = """\
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { ClientSideConnection, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const [piton, cwd, words] = process.argv.slice(2);
const agent = spawn(piton, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => agent.on("exit", (code, signal) => resolve(code ?? signal)));
const updates = [];
const permissions = [];
const editor = {
  async requestPermission({ toolCall, options }) {
    permissions.push(toolCall.title);
    const allow = options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  },
  async sessionUpdate({ update }) {
    updates.push(update);
  },
};
const connection = new ClientSideConnection(
  () => editor,
  ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout)),
);
let stopReason;
try {
  await connection.initialize({
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const { sessionId } = await connection.newSession({ cwd, mcpServers: [] });
  ({ stopReason } = await connection.prompt({ sessionId, prompt: [{ type: "text", text: words }] }));
} finally {
  agent.stdin.end(); // the editor going away: the agent's cue to exit
}
const texts = (kind) =>
  updates.filter((u) => u.sessionUpdate === kind && u.content.type === "text").map((u) => u.content.text);
const said = (content) =>
  (content ?? []).filter((c) => c.type === "content" && c.content.type === "text").map((c) => c.content.text);
const calls = updates
  .filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update")
  .map((u) => ({ kind: u.sessionUpdate, id: u.toolCallId, status: u.status ?? null, text: said(u.content) }));
const exit = await exited;
console.log(JSON.stringify({ stopReason, message: texts("agent_message_chunk").join(""),
  thought: texts("agent_thought_chunk").join(""), permissions, calls, exit }));
"""


@pytest.fixture(scope="session")
def acp_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder whose node_modules holds the SDK."""
    return npm_installed(tmp_path_factory, SDK)


def edit(acp_sdk: Path, tmp_path: Path, project: Path, words: str) -> dict[str, Any]:
    """What the TypeScript editor saw of one turn of `words` in `project`."""
    here = tmp_path / "editor"  # beside the project, not above it: nothing of the editor in its view
    here.mkdir()
    script = here / "editor.mjs"
    script.write_text(EDITOR)
    # Node resolves a module's imports from the module's own folder up, so the script needs the
    # installed packages beside it
    (here / "node_modules").symlink_to(acp_sdk / "node_modules", target_is_directory=True)
    said: dict[str, Any] = node_said(str(script), PITON, str(project.resolve()), words, cwd=here)
    return said


def test_the_typescript_client_sees_a_turn_with_a_command_it_allowed(
    acp_sdk: Path, fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    fake_api.add(
        reply(Thinking("Let me run it."), "Running.", ToolCall("Bash", {"command": "echo from-ts"})),
        reply("Done."),
    )
    said = edit(acp_sdk, tmp_path, project, "run it")
    assert said["stopReason"] == "end_turn"
    assert said["message"] == "Running.Done."
    assert said["thought"] == "Let me run it."
    assert said["permissions"] == ["Bash(echo from-ts)"]
    [started] = [c for c in said["calls"] if c["kind"] == "tool_call"]
    *_, last = [c for c in said["calls"] if c["kind"] == "tool_call_update" and c["id"] == started["id"]]
    assert last["status"] == "completed"
    assert any("from-ts" in text for text in last["text"])
    assert said["exit"] == 0  # the agent exits cleanly once the editor closes its input
