"""Where Claude is reached: Anthropic's API (or a gateway in front of it), Amazon Bedrock or Google
Vertex AI, chosen as Claude Code chooses (`CLAUDE_CODE_USE_BEDROCK=1`, `CLAUDE_CODE_USE_VERTEX=1`),
each through the `anthropic` SDK's own client for it. The Messages API is the same everywhere; what
differs is the address, the authentication, the model's name, and how the stream is framed (the
SDK's clients deal with all but the name).

- Bedrock: the region from `AWS_REGION` (or `AWS_DEFAULT_REGION`, or the AWS profile), credentials
  from the AWS chain (`AWS_PROFILE`, keys, SSO…) or a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`),
  `ANTHROPIC_BEDROCK_BASE_URL` for a gateway; the SDK needs `boto3` (the `bedrock` extra).
- Vertex: `CLOUD_ML_REGION` and `ANTHROPIC_VERTEX_PROJECT_ID`, Google's application default
  credentials (the `vertex` extra), `ANTHROPIC_VERTEX_BASE_URL` for a gateway.
- `CLAUDE_CODE_SKIP_BEDROCK_AUTH=1` / `CLAUDE_CODE_SKIP_VERTEX_AUTH=1`: no signing, for a gateway
  that authenticates on its own.
- Everywhere: `ANTHROPIC_CUSTOM_HEADERS` ("Name: value" lines) is sent with every request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

Platform = Literal["anthropic", "bedrock", "vertex"]

_TRUE = ("1", "true", "yes", "on")
_DATED = re.compile(r"^(?P<name>claude-.+)-(?P<date>\d{8})$")
_BEDROCK_EXTRA = "pip install 'piton-code[bedrock]' (or boto3 beside Piton)"
_VERTEX_EXTRA = "pip install 'piton-code[vertex]' (or google-auth beside Piton)"


def _on(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in _TRUE


def platform(env: Mapping[str, str]) -> Platform:
    if _on(env, "CLAUDE_CODE_USE_BEDROCK"):
        return "bedrock"
    if _on(env, "CLAUDE_CODE_USE_VERTEX"):
        return "vertex"
    return "anthropic"


def custom_headers(env: Mapping[str, str]) -> dict[str, str]:
    """`ANTHROPIC_CUSTOM_HEADERS`: one `Name: value` a line, as Claude Code reads it."""
    headers: dict[str, str] = {}
    for line in env.get("ANTHROPIC_CUSTOM_HEADERS", "").splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip():
            headers[name.strip()] = value.strip()
    return headers


def platform_model(model: str, where: Platform) -> str:
    """The name the platform knows `model` by. An id already in the platform's form (a Bedrock
    inference profile or ARN, a Vertex `name@date`) is kept as given: that is how a user names a
    model the mapping does not know."""
    if where == "bedrock":
        if model.startswith("arn:") or "anthropic." in model:
            return model
        return f"global.anthropic.{model}-v1:0"
    if where == "vertex":
        dated = _DATED.match(model)
        return f"{dated['name']}@{dated['date']}" if dated else model
    return model


def missing_extra(where: Platform, env: Mapping[str, str]) -> str | None:
    """Why the platform's client cannot be made here (its SDK extra is missing), or None."""
    import importlib.util

    if where == "bedrock" and importlib.util.find_spec("boto3") is None:
        return f"Amazon Bedrock needs boto3: {_BEDROCK_EXTRA}"
    skip = _on(env, "CLAUDE_CODE_SKIP_VERTEX_AUTH")
    if where == "vertex" and not skip and _missing_module("google.auth"):
        return f"Google Vertex AI needs google-auth: {_VERTEX_EXTRA}"
    return None


def _missing_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:  # its parent package is missing too
        return True


def make_client(
    where: Platform, env: Mapping[str, str], *, api_key: str | None, base_url: str | None, **options: Any
) -> Any:
    """The SDK's async client for `where`, with the custom headers and `options` (timeout,
    retries); `api_key` and `base_url` are Anthropic's own (given in tests, else the SDK's
    variables)."""
    import anthropic

    headers = custom_headers(env) or None
    if where == "anthropic":
        return anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, default_headers=headers, **options
        )
    if where == "bedrock":
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None
        if _on(env, "CLAUDE_CODE_SKIP_BEDROCK_AUTH"):  # a key stands in for SigV4, and is taken out
            options.update(api_key=_UNSIGNED, http_client=_unsigned_http(env))
        return anthropic.AsyncAnthropicBedrock(aws_region=region, default_headers=headers, **options)
    if _on(env, "CLAUDE_CODE_SKIP_VERTEX_AUTH"):  # a token stands in for Google's, and is taken out
        options.update(access_token=_UNSIGNED, http_client=_unsigned_http(env))
    if project := env.get("ANTHROPIC_VERTEX_PROJECT_ID"):
        options["project_id"] = project
    return anthropic.AsyncAnthropicVertex(region=env.get("CLOUD_ML_REGION") or "us-east5", **options)


_UNSIGNED = "piton-unsigned"


def _unsigned_http(env: Mapping[str, str]) -> Any:
    """An HTTP client that sends requests unsigned, for a gateway that authenticates them itself: the
    SDK's client signs with the placeholder `_UNSIGNED`, which this client takes out before sending
    (putting back the `Authorization` of `ANTHROPIC_CUSTOM_HEADERS`, when the gateway wants one)."""
    import anthropic

    own = {name: value for name, value in custom_headers(env).items() if name.lower() == "authorization"}

    async def strip(request: Any) -> None:
        if request.headers.get("authorization") == f"Bearer {_UNSIGNED}":
            del request.headers["authorization"]
            request.headers.update(own)

    return anthropic.DefaultAsyncHttpxClient(event_hooks={"request": [strip]})
