"""OpenAI-compatible endpoints: the installed `piton`, the official `openai` SDK, and a fake server
on 127.0.0.1 speaking Chat Completions' server-sent events, through the whole loop (tool calls and
their results, images, usage and cost)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from piton.core.conversation.messages import (
    Base64ImageSource,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.models import model_info
from piton.core.providers import ModelRequest
from piton.core.providers.openai_format import chat_messages, split_model
from piton.testing.script import HttpError, Thinking, ToolCall, reply
from tests.fakes.fake_openai import FakeOpenAI, check
from tests.fakes.images import png
from tests.helpers import piton, piton_here


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-openai")
        monkeypatch.delenv("ANTHROPIC_API_KEY")  # nothing of Anthropic's is needed
        yield fake


def test_a_tool_loop_with_an_openai_model(openai_server: FakeOpenAI, project: Path) -> None:
    (project / "notes.txt").write_text("buy milk\n")
    openai_server.add(
        reply(
            Thinking("Read it."), ToolCall("Read", {"file_path": "notes.txt"}), cache_read_input_tokens=100
        ),
        reply("The note says to buy milk.", output_tokens=40),
    )
    done = piton(
        project, "-p", "what does notes.txt say?", "--model", "openai:gpt-5", "--output-format", "json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "The note says to buy milk." and result["num_turns"] == 2
    assert openai_server.rejections == []
    first, second = openai_server.bodies
    assert first["model"] == "gpt-5" and first["stream"] is True
    assert {t["function"]["name"] for t in first["tools"]} >= {"Read", "Bash", "Edit"}
    assert first["messages"][0]["role"] == "system"
    call = second["messages"][-2]["tool_calls"][0]
    assert call["function"]["name"] == "Read" and json.loads(call["function"]["arguments"]) == {
        "file_path": "notes.txt"
    }
    answer = second["messages"][-1]
    assert (
        answer["role"] == "tool" and answer["tool_call_id"] == call["id"] and "buy milk" in answer["content"]
    )
    assert result["total_cost_usd"] > 0  # priced from the table: gpt-5's rates
    usage = result["usage"]
    assert usage["cache_read_input_tokens"] == 100 and usage["output_tokens"] == 25 + 40


def test_a_local_server_needs_no_key_and_costs_nothing(
    openai_server: FakeOpenAI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("PITON_OLLAMA_BASE_URL", openai_server.base_url)
    openai_server.api_key = "local"
    openai_server.add(reply("Hello from a local model."))
    done = piton_here("-p", "hi", "--model", "ollama:qwen3-coder", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "Hello from a local model." and result["total_cost_usd"] == 0
    assert "no price is known for ollama:qwen3-coder" in done.stderr
    assert openai_server.bodies[0]["model"] == "qwen3-coder"
    openai_server.add(reply("Chosen by --provider."))
    chosen = piton_here("-p", "hi", "--provider", "ollama", "--model", "qwen3-coder")
    assert chosen.returncode == 0 and chosen.stdout == "Chosen by --provider.\n", chosen.stderr
    assert openai_server.bodies[-1]["model"] == "qwen3-coder"
    for args, said in (
        (["--provider", "ollama"], "--provider ollama needs --model"),
        (["--provider", "mistral", "--model", "x"], "--provider mistral: not a provider"),
        (["--provider", "anthropic", "--model", "ollama:x"], "--provider anthropic with --model ollama:x"),
    ):
        refused = piton_here("-p", "hi", *args)
        assert refused.returncode == 1 and refused.stderr.startswith(f"piton: {said}"), refused.stderr
    settings = Path.home() / ".piton" / "settings.json"  # the user's own: a price for it
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"modelPrices": {"ollama:qwen3-coder": {"input": 1.0, "output": 2.0}}}))
    openai_server.add(reply("Priced now."))
    done = piton_here("-p", "hi", "--model", "ollama:qwen3-coder", "--output-format", "json")
    assert json.loads(done.stdout)["total_cost_usd"] > 0 and "no price" not in done.stderr


def test_errors_from_the_server_are_one_line(
    openai_server: FakeOpenAI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_server.add(HttpError(404, "invalid_request_error", "The model `gpt-9` does not exist"))
    done = piton_here("-p", "hi", "--model", "openai:gpt-9")
    assert done.returncode == 1 and "does not exist" in done.stderr and "Traceback" not in done.stderr
    monkeypatch.delenv("OPENAI_API_KEY")
    done = piton_here("-p", "hi", "--model", "openai:gpt-5")
    assert done.returncode == 1 and "OPENAI_API_KEY is not set" in done.stderr


def test_messages_convert_to_chat_completions() -> None:
    image = ImageBlock(
        source=Base64ImageSource(media_type="image/png", data=base64.b64encode(png()).decode())
    )
    request = ModelRequest(
        model="openai:gpt-5",
        system="Be brief.",
        messages=[
            Message(role="user", content=[TextBlock(text="look"), image]),
            Message(
                role="assistant",
                content=[
                    TextBlock(text="Reading."),
                    ToolUseBlock(id="c1", name="Read", input={"file_path": "a.png"}),
                ],
            ),
            Message(
                role="user",
                content=[
                    ToolResultBlock(
                        tool_use_id="c1", content=[TextBlock(text="an image:"), image], is_error=False
                    )
                ],
            ),
        ],
    )
    messages = chat_messages(request)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "an image:"}
    assert messages[4]["content"][0]["type"] == "image_url"  # a tool's image follows as the user's
    assert check({"model": "gpt-5", "messages": messages}) is None
    assert split_model("openai:gpt-5") == ("openai", "gpt-5") and split_model("claude-sonnet-4-5")[0] is None
    assert model_info("openai:gpt-5-2025-08-07").prices.input == 1.25
    assert model_info("ollama:qwen3").prices.input == 0 and not model_info("ollama:qwen3").known


def test_tool_calls_without_ids_get_ids_of_their_own(openai_server: FakeOpenAI, project: Path) -> None:
    """Some local servers send tool calls without an id: each gets one, unique in the conversation."""
    (project / "a.txt").write_text("alpha\n")
    openai_server.add(
        reply(ToolCall("Read", {"file_path": "a.txt"}, id="")),
        reply(ToolCall("Read", {"file_path": "a.txt"}, id="")),
        reply("Read it twice."),
    )
    done = piton_here("-p", "read a.txt twice", "--model", "openai:gpt-5")
    assert done.returncode == 0, done.stderr
    assert openai_server.rejections == []
    ids = [m["tool_call_id"] for m in openai_server.bodies[-1]["messages"] if m["role"] == "tool"]
    assert len(ids) == 2 and len(set(ids)) == 2 and all(ids)


def test_a_model_chosen_in_the_users_settings_needs_no_anthropic_key(
    openai_server: FakeOpenAI, project: Path
) -> None:
    settings = Path.home() / ".piton" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"model": "openai:gpt-5"}))
    openai_server.add(reply("Chosen by the settings."))
    done = piton_here("-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Chosen by the settings."


def test_parallel_calls_at_one_index_and_a_reply_cut_at_the_length_limit(
    openai_server: FakeOpenAI, project: Path
) -> None:
    """Some servers send every tool call at index 0, each with its own id: they stay two calls. A
    reply cut at the length limit mid-call is a cut-off reply, not a malformed call."""
    (project / "a.txt").write_text("alpha\n")
    (project / "b.txt").write_text("beta\n")
    openai_server.one_index = True
    openai_server.add(
        reply(ToolCall("Read", {"file_path": "a.txt"}), ToolCall("Read", {"file_path": "b.txt"})),
        reply(
            ToolCall("Write", raw_json='{"file_path": "c.txt", "content": "unfin'), stop_reason="max_tokens"
        ),
        reply("Done."),
    )
    done = piton_here("-p", "read both", "--model", "openai:gpt-5", "--allowedTools", "Read")
    assert done.returncode == 0, done.stderr
    assert openai_server.rejections == []
    tools = [m for m in openai_server.bodies[1]["messages"] if m["role"] == "tool"]
    assert [("alpha" in t["content"], "beta" in t["content"]) for t in tools] == [
        (True, False),
        (False, True),
    ]
    cut = [m for m in openai_server.bodies[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "cut off" in cut or "max_tokens" in cut or "limit" in cut, cut


def test_a_thinking_only_turn_is_left_out_for_another_model() -> None:
    from piton.core.conversation.messages import ThinkingBlock

    request = ModelRequest(
        model="openai:gpt-5",
        system="",
        messages=[
            Message(role="user", content=[TextBlock(text="hi")]),
            Message(role="assistant", content=[ThinkingBlock(thinking="hmm", signature="sig")]),
            Message(role="user", content=[TextBlock(text="go on")]),
        ],
    )
    messages = chat_messages(request)
    assert [m["role"] for m in messages] == ["user", "user"]
    assert check({"model": "gpt-5", "messages": messages}) is None


def test_the_context_window_comes_from_the_server(
    openai_server: FakeOpenAI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM says what it loaded (`max_model_len`), llama.cpp what it was trained for; a server that
    cannot say leaves the table's value."""
    monkeypatch.setenv("PITON_VLLM_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("PITON_LLAMACPP_BASE_URL", openai_server.base_url)
    openai_server.api_key = "local"  # what Piton sends a local server (the SDK insists on a key)
    openai_server.models = {"qwen3": {"max_model_len": 32768}, "gemma": {"meta": {"n_ctx_train": 8192}}}
    windows = {}
    for model in ("vllm:qwen3", "llamacpp:gemma", "vllm:unknown"):
        openai_server.add(reply("ok"))
        done = piton_here("-p", "hi", "--model", model, "--output-format", "json")
        assert done.returncode == 0, done.stdout + done.stderr
        windows[model] = json.loads(done.stdout)["modelUsage"][model]["contextWindow"]
    assert windows == {"vllm:qwen3": 32768, "llamacpp:gemma": 8192, "vllm:unknown": 128_000}
    assert openai_server.model_lookups == ["qwen3", "gemma", "unknown"]  # once a run, no retries


def test_a_tool_search_result_is_text_for_another_model() -> None:
    from piton.core.conversation.messages import ToolReferenceBlock

    loaded = ToolResultBlock(tool_use_id="call_1", content=[ToolReferenceBlock(tool_name="WebFetch")])
    request = ModelRequest(
        model="openai:gpt-5",
        system="",
        messages=[
            Message.user("read the page"),
            Message(role="assistant", content=[ToolUseBlock(id="call_1", name="ToolSearch", input={})]),
            Message(role="user", content=[loaded]),
        ],
    )
    messages = chat_messages(request)
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "(The tool WebFetch was loaded here.)",
    }


def test_a_local_server_on_plain_http_reads_no_certificates_and_https_says_what_it_cannot_read(
    openai_server: FakeOpenAI, project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The OpenAI SDK's client shares Piton's certificate settings: none for plain http (a certificate
    file that cannot be read does not matter there), and one line when https needs them."""
    missing = tmp_path / "nowhere.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    monkeypatch.setenv("PITON_OLLAMA_BASE_URL", openai_server.base_url)
    openai_server.api_key = "local"
    openai_server.add(reply("No certificates needed."))
    done = piton_here("-p", "hi", "--model", "ollama:qwen3-coder")
    assert (done.returncode, done.stdout) == (0, "No certificates needed.\n"), done.stderr
    monkeypatch.setenv("OPENAI_BASE_URL", "https://127.0.0.1:9/v1")
    # a process of its own: the certificates for https are read once a process, and this test
    # process may have read them already
    refused = piton(project, "-p", "hi", "--model", "openai:gpt-5")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"piton: cannot read the certificates to trust for https (SSL_CERT_FILE={missing}): "
        "No such file or directory"
    ]
