"""What Piton knows about each model: aliases, context window, output limit, thinking style, prices.

This is the one place for per-model numbers. Ids we have never heard of still work: they get safe
defaults (a 200k window, a modest output limit, no thinking) rather than an error of ours.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from piton.core.records import record

ThinkingStyle = Literal["adaptive", "enabled", "none"]

DEFAULT_MODEL = "claude-sonnet-5-5"
ALIASES = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
}


@record(frozen=True)
class Prices:
    """US dollars per million tokens."""

    input: float
    output: float

    @property
    def cache_write(self) -> float:  # 5-minute cache writes cost 1.25x input
        return self.input * 1.25

    @property
    def cache_read(self) -> float:
        return self.input * 0.1


@record(frozen=True)
class ModelInfo:
    id: str
    context_window: int
    max_output_tokens: int  # what we ask for, not necessarily the model's ceiling
    thinking: ThinkingStyle
    prices: Prices
    known: bool = True
    effort: bool = False  # takes `output_config.effort` (low ... max)
    tool_search: bool = False  # takes deferred tools (`defer_loading`) and `tool_reference` blocks
    vendor: str = (
        "anthropic"  # whose model: Anthropic's, or an OpenAI-compatible endpoint's (`openai`, `ollama`…)
    )


_SONNET = Prices(3.0, 15.0)
_OPUS_OLD = Prices(15.0, 75.0)
_OPUS = Prices(5.0, 25.0)
_HAIKU = Prices(1.0, 5.0)
_HAIKU_35 = Prices(0.8, 4.0)

_WINDOW_1M = 1_000_000
_WINDOW_200K = 200_000
_SAFE_MAX_TOKENS = 8_192
_MAX_TOKENS = 32_000

# (family, major, minor) is enough to tell everything we need; dated ids share their alias's row.
# Families beyond opus/sonnet/haiku (fable, mythos...) parse too and are priced like sonnet.
_ID = re.compile(
    r"^claude-(?:(?P<fam>[a-z]+)-(?P<maj>\d+)(?:-(?P<min>\d{1,2}))?"
    r"|(?P<maj2>\d+)-(?P<min2>\d{1,2})-(?P<fam2>[a-z]+))(?:-\d{8}|-latest)?$"
)


# A platform's name for a Claude model: Bedrock's `us.anthropic.claude-sonnet-4-5-20250929-v1:0` (or an
# inference profile's ARN ending in it), Vertex's `claude-sonnet-4-5@20250929`
_PLATFORM_ID = re.compile(
    r"^(?:arn:.*/)?(?:[a-z]{2,6}\.)?anthropic\.(?P<bedrock>claude-.+?)(?:-v\d+(?::\d+)?)?$"
    r"|^(?P<vertex>claude-.+)@(?P<date>\d{8})$"
)


def claude_id(name: str) -> str:
    """The Claude model id behind a Bedrock or Vertex name (`name` itself for any other)."""
    m = _PLATFORM_ID.match(name)
    if m is None:
        return name
    return m["bedrock"] or f"{m['vertex']}-{m['date']}"


def resolve_alias(name: str) -> str:
    return ALIASES.get(name.strip().lower(), name.strip())


def small_fast_model() -> str:
    """The model for side requests (WebFetch's reading of a page): Claude Code's variables, else
    the haiku alias."""
    import os

    for name in ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL"):
        if value := os.environ.get(name, "").strip():
            return resolve_alias(value)
    return ALIASES["haiku"]


def _prices(family: str, version: tuple[int, int]) -> Prices:
    if family == "opus":
        return _OPUS if version >= (4, 5) else _OPUS_OLD
    if family == "haiku":
        return _HAIKU if version >= (4, 5) else _HAIKU_35
    return _SONNET


# OpenAI's models, as `openai:<id>`: dollars per million tokens (input, output) and context window.
# Other `provider:model` ids (local servers) cost nothing; `modelPrices` in the settings adds more.
_OPENAI: dict[str, tuple[float, float, int]] = {
    "gpt-5": (1.25, 10.0, 400_000),
    "gpt-5-mini": (0.25, 2.0, 400_000),
    "gpt-5-nano": (0.05, 0.4, 400_000),
    "gpt-4.1": (2.0, 8.0, 1_047_576),
    "gpt-4.1-mini": (0.4, 1.6, 1_047_576),
    "gpt-4.1-nano": (0.1, 0.4, 1_047_576),
    "gpt-4o": (2.5, 10.0, 128_000),
    "gpt-4o-mini": (0.15, 0.6, 128_000),
    "o3": (2.0, 8.0, 200_000),
    "o4-mini": (1.1, 4.4, 200_000),
}
OTHER_VENDORS = ("openai", "ollama", "lmstudio", "vllm", "llamacpp")  # `vendor:model` ids
PROVIDER_NAMES = ("anthropic", *OTHER_VENDORS)


def split_model(model: str) -> tuple[str | None, str]:
    """(`openai`, `gpt-5`) for `openai:gpt-5`; (None, model) for a Claude model."""
    name, colon, rest = model.partition(":")
    return (name, rest) if colon and rest and name in OTHER_VENDORS else (None, model)


def with_provider(provider: str | None, model: str | None) -> str | None:
    """The model `--provider NAME --model ID` names (`ollama` and `qwen3-coder`: `ollama:qwen3-coder`).
    Raises ValueError, in words for people, for a provider or a pairing that cannot be."""
    if provider is None:
        return model
    if provider not in PROVIDER_NAMES:
        raise ValueError(f"--provider {provider}: not a provider ({', '.join(PROVIDER_NAMES)})")
    vendor, colon, rest = (model or "").partition(":")
    named = vendor if colon and rest and vendor in OTHER_VENDORS else None
    if provider == "anthropic":
        if named is not None:
            raise ValueError(f"--provider anthropic with --model {model}: that model is {named}'s")
        return model
    if named is not None and named != provider:
        raise ValueError(f"--provider {provider} with --model {model}: that model is {named}'s")
    if model is None:
        if provider != "openai":
            raise ValueError(f"--provider {provider} needs --model (the name the server knows the model by)")
        model = "gpt-5"
    return model if named is not None else f"{provider}:{model}"


_OTHER_WINDOW = 128_000
_FREE = Prices(0.0, 0.0)


_SERVER_WINDOWS: dict[str, int] = {}


def add_window(model_id: str, tokens: int) -> None:
    """The context window a model's server reported (a local server knows what it loaded). A fact
    about the server, the same for every session of the process: kept process-wide."""
    _SERVER_WINDOWS[model_id] = tokens


def _other_model(model_id: str, extra: Mapping[str, Prices]) -> ModelInfo | None:
    """A `provider:model` id (an OpenAI-compatible endpoint's), or None for a Claude model."""
    vendor, colon, rest = model_id.partition(":")
    if not colon or not rest or vendor not in OTHER_VENDORS:
        return None
    base = re.sub(r"-\d{4}-\d{2}-\d{2}$", "", rest)  # OpenAI's dated ids share their model's row
    known = _OPENAI.get(base) if vendor == "openai" else None
    prices = extra.get(model_id) or (Prices(known[0], known[1]) if known else _FREE)
    window = _SERVER_WINDOWS.get(model_id) or (known[2] if known else _OTHER_WINDOW)
    priced = known is not None or model_id in extra
    reasoning = vendor == "openai" and re.match(r"(gpt-5|o\d)", base) is not None  # takes reasoning_effort
    return ModelInfo(model_id, window, 16_384, "none", prices, known=priced, effort=reasoning, vendor=vendor)


def model_info(name: str, prices: Mapping[str, Prices] | None = None) -> ModelInfo:
    """Everything we know about `name` (an alias or a full id); `prices` are a session's own for
    models the table does not know (the settings' `modelPrices`)."""
    model_id = resolve_alias(name)
    if (other := _other_model(model_id, prices or {})) is not None:
        return other
    m = _ID.match(claude_id(model_id))
    if m is None:
        return ModelInfo(model_id, _WINDOW_200K, _SAFE_MAX_TOKENS, "none", _SONNET, known=False)
    family = m["fam"] or m["fam2"]
    version = (int(m["maj"] or m["maj2"]), int(m["min"] or m["min2"] or 0))
    if version >= (4, 6):
        thinking: ThinkingStyle = "adaptive"
    elif version >= (3, 7):
        thinking = "enabled"
    else:
        thinking = "none"
    window = _WINDOW_1M if version >= (5, 0) else _WINDOW_200K
    max_tokens = _MAX_TOKENS if version >= (4, 0) else _SAFE_MAX_TOKENS
    effort = version >= (4, 6) or (family == "opus" and version >= (4, 5))
    # the API's tool search serves the 4.5 models and later (Haiku 4.5 included)
    tool_search = version >= (4, 5)
    listed = _prices(family, version)
    return ModelInfo(model_id, window, max_tokens, thinking, listed, effort=effort, tool_search=tool_search)


# Models going away, and the date the API stops serving them: people are told once per session. Kept
# here rather than read from the SDK (whose table is private and has moved between releases).
RETIRING: dict[str, str] = {
    "claude-mythos-preview": "June 30th, 2026",
    "claude-opus-4-5": "January 22nd, 2027",
    "claude-opus-4-5-20251101": "January 22nd, 2027",
    "claude-sonnet-4-5": "November 30th, 2026",
    "claude-sonnet-4-5-20250929": "November 30th, 2026",
}
# Models that take adaptive thinking and work worse with a fixed budget (`thinking.type=enabled`).
PREFER_ADAPTIVE = frozenset({"claude-opus-4-6", "claude-mythos-preview"})


def model_warnings(model: str, thinking_type: str | None) -> list[str]:
    """What a request for `model` should tell people (a retiring model, a thinking setting it
    works worse with), each a line."""
    texts = []
    if model in RETIRING:
        texts.append(f"The model '{model}' is deprecated and will reach end-of-life on {RETIRING[model]}.")
    if model in PREFER_ADAPTIVE and thinking_type == "enabled":
        texts.append(
            f"Using Claude with {model} and 'thinking.type=enabled' is deprecated. Use "
            "'thinking.type=adaptive' instead which results in better model performance in our testing: "
            "https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking"
        )
    return texts
