"""Claude on Amazon Bedrock, Google Vertex AI and behind a gateway: the installed `piton`, the SDK's
own client for each, and the fake API speaking each platform's shape (Bedrock's paths, SigV4 and
AWS event stream; Vertex's paths and version in the body)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from piton.core.models import claude_id, model_info
from piton.core.providers.cloud import custom_headers, platform_model
from piton.testing.script import MidStreamError, ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton, piton_here


def result_of(stdout: str) -> dict[str, object]:
    result = json.loads(stdout)
    assert isinstance(result, dict)
    return result


@pytest.fixture
def bedrock(fake_api: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropicAPI:
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake_api.base_url)
    monkeypatch.delenv("ANTHROPIC_API_KEY")  # Bedrock takes none of Anthropic's credentials
    return fake_api


def test_bedrock_signs_with_aws_credentials_and_streams_a_tool_loop(
    bedrock: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-checked")
    (project / "notes.txt").write_text("remember the milk\n")
    bedrock.add(reply(ToolCall("Read", {"file_path": "notes.txt"})), reply("It says to remember the milk."))
    done = piton(project, "-p", "read notes.txt", "--model", "claude-sonnet-4-5", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    result = result_of(done.stdout)
    assert result["result"] == "It says to remember the milk."
    paths = [r.path for r in bedrock.requests]
    assert paths == ["/model/global.anthropic.claude-sonnet-4-5-v1:0/invoke-with-response-stream"] * 2
    assert all(r.headers["authorization"].startswith("AWS4-HMAC-SHA256") for r in bedrock.requests)
    assert bedrock.rejections == []
    assert isinstance(result["total_cost_usd"], float) and result["total_cost_usd"] > 0  # priced as the model


def test_bedrock_takes_an_api_key_and_a_model_named_as_bedrock_names_it(
    bedrock: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "test-key")
    profile = "us.anthropic.claude-opus-4-5-20251101-v1:0"
    bedrock.add(reply("Hello from Bedrock."))
    done = piton_here("-p", "hi", "--model", profile, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    assert result_of(done.stdout)["result"] == "Hello from Bedrock."
    [request] = bedrock.requests
    assert request.path == f"/model/{profile}/invoke-with-response-stream"
    assert request.headers["authorization"] == "Bearer test-key"


def test_bedrock_without_a_region_is_one_line(
    bedrock: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_REGION")
    done = piton_here("-p", "hi")
    assert done.returncode == 1
    assert "region" in done.stderr and "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert bedrock.requests == []


def test_bedrock_through_a_gateway_that_authenticates_on_its_own(
    bedrock: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No AWS credentials at all: nothing is signed, and the gateway's own header goes as given."""
    monkeypatch.setenv("CLAUDE_CODE_SKIP_BEDROCK_AUTH", "1")
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "Authorization: Bearer test-key\nX-Team: platform")
    bedrock.add(reply("Hello through the gateway."))
    done = piton_here("-p", "hi", "--model", "claude-sonnet-4-5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello through the gateway."
    [request] = bedrock.requests
    assert request.headers["authorization"] == "Bearer test-key" and request.headers["x-team"] == "platform"
    assert "x-amz-date" not in request.headers


def test_an_error_in_the_middle_of_a_bedrock_stream(
    bedrock: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bedrock's exception frames are read as the API's `error` events: a busy service is asked
    again, another error ends the run in one line naming it."""
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "test-key")
    busy = reply("never whole", fault=MidStreamError(after=3, error_type="serviceUnavailableException"))
    broken = reply(
        "never whole", fault=MidStreamError(after=3, error_type="modelStreamErrorException", message="bad")
    )
    bedrock.add(busy, reply("Second try."))
    done = piton_here("-p", "hi", "--model", "claude-sonnet-4-5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Second try." and len(bedrock.requests) == 2
    bedrock.add(broken)
    done = piton_here("-p", "hi", "--model", "claude-sonnet-4-5")
    assert done.returncode == 1
    assert "API error during the reply (modelStreamErrorException): bad" in done.stderr
    assert "Traceback" not in done.stderr


def test_vertex_through_a_gateway_with_its_own_authentication(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_USE_VERTEX", "1")
    monkeypatch.setenv("CLOUD_ML_REGION", "us-east5")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "my-project")
    monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", f"{fake_api.base_url}/v1")
    monkeypatch.setenv("CLAUDE_CODE_SKIP_VERTEX_AUTH", "1")  # the gateway's token comes as a header
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "Authorization: Bearer test-key\nX-Team: platform")
    fake_api.add(reply("Hello from Vertex."))
    done = piton_here("-p", "hi", "--model", "claude-sonnet-4-5-20250929")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello from Vertex."
    [request] = fake_api.requests
    assert request.path == (
        "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/"
        "claude-sonnet-4-5@20250929:streamRawPredict"
    )
    assert request.headers["x-team"] == "platform" and fake_api.rejections == []


def test_a_gateway_with_a_bearer_token_and_custom_headers(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "test-key")
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Gateway-Route: claude\nbroken line without colon")
    fake_api.add(reply("Through the gateway."))
    done = piton_here("-p", "hi")
    assert done.returncode == 0, done.stderr
    [request] = fake_api.requests
    assert request.headers["authorization"] == "Bearer test-key" and "x-api-key" not in request.headers
    assert request.headers["x-gateway-route"] == "claude"


def test_model_names_map_between_claude_and_the_platforms() -> None:
    assert platform_model("claude-sonnet-4-5", "bedrock") == "global.anthropic.claude-sonnet-4-5-v1:0"
    assert platform_model("eu.anthropic.claude-haiku-4-5-20251001-v1:0", "bedrock").startswith("eu.")
    arn = "arn:aws:bedrock:us-east-1:111122223333:application-inference-profile/abc123"
    assert platform_model(arn, "bedrock") == arn
    assert platform_model("claude-opus-4-5-20251101", "vertex") == "claude-opus-4-5@20251101"
    assert platform_model("claude-opus-4-5", "vertex") == "claude-opus-4-5"
    assert claude_id("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "claude-sonnet-4-5-20250929"
    assert claude_id("claude-sonnet-4-5@20250929") == "claude-sonnet-4-5-20250929"
    assert model_info("global.anthropic.claude-sonnet-5-5-v1:0").context_window == 1_000_000
    assert custom_headers({"ANTHROPIC_CUSTOM_HEADERS": "A: 1\n: no name\nB:two words "}) == {
        "A": "1",
        "B": "two words",
    }


def test_fallback_model_takes_over_when_the_main_one_stays_overloaded(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from piton.testing.script import HttpError

    monkeypatch.setenv("PITON_MAX_RETRIES", "1")  # two attempts in all
    overloaded = HttpError(529, "overloaded_error", "Overloaded", {"retry-after": "0"})
    fake_api.add(overloaded, overloaded, reply("Answered by the fallback."))
    done = piton_here(
        "-p",
        "hi",
        "--model",
        "claude-opus-4-5",
        "--fallback-model",
        "claude-haiku-4-5",
        "--output-format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    assert result_of(done.stdout)["result"] == "Answered by the fallback."
    assert [b["model"] for b in fake_api.bodies] == ["claude-opus-4-5", "claude-opus-4-5", "claude-haiku-4-5"]
    assert "claude-opus-4-5 is overloaded; going on with the fallback model claude-haiku-4-5" in done.stderr
    fake_api.add(overloaded, overloaded)
    done = piton_here("-p", "hi", "--model", "claude-opus-4-5")  # without one: the error, in one line
    assert done.returncode == 1 and "overloaded" in done.stderr.lower() and "Traceback" not in done.stderr


def test_bedrock_chosen_in_the_users_settings_env(
    bedrock: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's documented setup: the variables in `~/.claude/settings.json`'s `env`."""
    for name in ("CLAUDE_CODE_USE_BEDROCK", "AWS_REGION", "ANTHROPIC_BEDROCK_BASE_URL"):
        monkeypatch.delenv(name)
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    env = {
        "CLAUDE_CODE_USE_BEDROCK": "1",
        "AWS_REGION": "us-west-2",
        "ANTHROPIC_BEDROCK_BASE_URL": bedrock.base_url,
        "AWS_BEARER_TOKEN_BEDROCK": "test-key",
    }
    settings.write_text(json.dumps({"env": env}))
    bedrock.add(reply("From Bedrock, by the settings."))
    done = piton_here("-p", "hi", "--model", "claude-sonnet-4-5")
    assert done.returncode == 0, done.stderr
    assert bedrock.requests[0].path.startswith("/model/global.anthropic.claude-sonnet-4-5")


def test_bedrock_without_credentials_is_one_line(
    bedrock: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance to ask either
    done = piton_here("-p", "hi")
    assert done.returncode == 1, done.stdout
    assert (
        done.stderr.startswith("piton: ") and "Amazon Bedrock" in done.stderr and "credentials" in done.stderr
    )
    assert "internal error" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_thinking_is_left_off_to_continue_a_tool_loop_another_model_began() -> None:
    """A Claude model with thinking on cannot continue a tool loop whose assistant turn has no
    thinking block (a gpt model's, after `/model sonnet`): the request goes without thinking."""
    from piton.core.conversation.messages import (
        Message,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
    )
    from piton.core.providers import ModelRequest
    from piton.core.providers.body import thinking_param

    use = ToolUseBlock(id="c1", name="Read", input={"file_path": "a"})
    messages = [
        Message(role="user", content=[TextBlock(text="read a")]),
        Message(role="assistant", content=[use]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="c1", content="alpha")]),
    ]
    request = ModelRequest(model="claude-sonnet-4-5", system="", messages=messages)
    assert thinking_param(request) is None
    thought = Message(role="assistant", content=[ThinkingBlock(thinking="t", signature="s"), use])
    assert thinking_param(
        ModelRequest(model="claude-sonnet-4-5", system="", messages=[messages[0], thought, messages[2]])
    )


def test_doctor_says_which_cloud_and_calls_no_model_there(
    bedrock: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "test-key")
    done = piton_here("doctor")
    assert "credentials: Amazon Bedrock's AWS credentials (a Bedrock API key" in done.stdout
    assert "region us-east-1" in done.stdout
    assert "global.anthropic.claude-" in done.stdout and "on Amazon Bedrock (not checked)" in done.stdout
    assert bedrock.requests == []  # no tokens spent
