from __future__ import annotations

import pytest

from piton.core.models import model_info, resolve_alias


@pytest.mark.parametrize(
    ("alias", "full"),
    [
        ("sonnet", "claude-sonnet-5-5"),
        ("opus", "claude-opus-5-5"),
        ("haiku", "claude-haiku-5-5"),
        ("Sonnet ", "claude-sonnet-5-5"),
    ],
)
def test_aliases_resolve_to_current_models(alias: str, full: str) -> None:
    assert resolve_alias(alias) == full


@pytest.mark.parametrize(
    ("model", "thinking", "window"),
    [
        ("claude-sonnet-5-5", "adaptive", 1_000_000),
        ("claude-opus-5-5", "adaptive", 1_000_000),
        ("claude-sonnet-4-6", "adaptive", 200_000),
        ("claude-opus-4-6", "adaptive", 200_000),
        ("claude-sonnet-4-5-20250929", "enabled", 200_000),
        ("claude-haiku-4-5-20251001", "enabled", 200_000),
        ("claude-opus-4-1", "enabled", 200_000),
        ("claude-3-7-sonnet-20250219", "enabled", 200_000),
        ("claude-3-5-haiku-latest", "none", 200_000),
        ("claude-fable-5-2", "adaptive", 1_000_000),
        ("claude-mythos-5-1", "adaptive", 1_000_000),
    ],
)
def test_thinking_style_and_window_follow_the_model_generation(
    model: str, thinking: str, window: int
) -> None:
    info = model_info(model)
    assert (info.thinking, info.context_window) == (thinking, window)


@pytest.mark.parametrize("model", ["my-finetune", "claude-next-gen", "gpt-9"])
def test_unknown_ids_get_safe_defaults(model: str) -> None:
    info = model_info(model)
    assert info.id == model
    assert (info.known, info.context_window, info.max_output_tokens, info.thinking) == (
        False,
        200_000,
        8_192,
        "none",
    )


def test_prices_differ_by_family() -> None:
    assert (
        model_info("opus").prices.input > model_info("sonnet").prices.input > model_info("haiku").prices.input
    )
    assert model_info("claude-opus-4-1").prices.input == 15.0
    sonnet = model_info("sonnet").prices
    assert sonnet.cache_read == pytest.approx(sonnet.input * 0.1)
    assert sonnet.cache_write == pytest.approx(sonnet.input * 1.25)


def test_a_provider_named_apart_joins_the_model_id() -> None:
    from piton.core.models import with_provider

    assert with_provider(None, "sonnet") == "sonnet"
    assert with_provider("anthropic", None) is None
    assert with_provider("ollama", "qwen3-coder") == "ollama:qwen3-coder"
    assert with_provider("ollama", "ollama:qwen3-coder") == "ollama:qwen3-coder"
    assert with_provider("openai", None) == "openai:gpt-5"
    for provider, model in (
        ("ollama", None),
        ("mistral", "x"),
        ("vllm", "ollama:x"),
        ("anthropic", "openai:gpt-5"),
    ):
        with pytest.raises(ValueError, match=f"--provider {provider}"):
            with_provider(provider, model)
