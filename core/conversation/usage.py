"""Token usage as the API reports it, totals per model, and what they cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from piton.core.models import Prices, model_info
from piton.core.records import record

WEB_SEARCH_USD = 0.01  # $10 per 1,000 searches


@record
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    web_search_requests: int = 0  # server-side searches, billed by the search
    cache_creation_1h_input_tokens: int = 0  # of the cache writes, those kept for an hour
    service_tier: str = "standard"

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.web_search_requests + other.web_search_requests,
            self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens,
            other.service_tier,
        )

    def cost_usd(self, model: str, prices: Mapping[str, Prices] | None = None) -> float:
        """What these tokens cost on `model` (`prices`: the session's own, see `model_info`)."""
        p = model_info(model, prices).prices
        return (
            self.input_tokens * p.input
            + self.output_tokens * p.output
            + self.cache_creation_input_tokens * p.cache_write
            + self.cache_read_input_tokens * p.cache_read
        ) / 1_000_000 + self.web_search_requests * WEB_SEARCH_USD

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
            "server_tool_use": {"web_search_requests": self.web_search_requests, "web_fetch_requests": 0},
            "service_tier": self.service_tier,
            "cache_creation": {
                "ephemeral_1h_input_tokens": self.cache_creation_1h_input_tokens,
                "ephemeral_5m_input_tokens": self.cache_creation_5m_input_tokens,
            },
        }

    @property
    def cache_creation_5m_input_tokens(self) -> int:
        return self.cache_creation_input_tokens - self.cache_creation_1h_input_tokens


@record
class UsageTotals:
    """Usage summed per model over a run (a run may switch models)."""

    by_model: dict[str, Usage] = field(default_factory=dict)
    prices: Mapping[str, Prices] = field(default_factory=dict)  # the session's own (`model_info`)

    def add(self, model: str, usage: Usage) -> None:
        self.by_model[model] = self.by_model.get(model, Usage()) + usage

    @property
    def total(self) -> Usage:
        out = Usage()
        for usage in self.by_model.values():
            out = out + usage
        return out

    @property
    def cost_usd(self) -> float:
        return sum(u.cost_usd(m, self.prices) for m, u in self.by_model.items())

    def model_usage_dict(self) -> dict[str, dict[str, Any]]:
        """Claude Code's `modelUsage` shape: camelCase token counts and cost per model."""
        return {
            model: {
                "inputTokens": u.input_tokens,
                "outputTokens": u.output_tokens,
                "cacheReadInputTokens": u.cache_read_input_tokens,
                "cacheCreationInputTokens": u.cache_creation_input_tokens,
                "webSearchRequests": u.web_search_requests,
                "costUSD": round(u.cost_usd(model, self.prices), 6),
                "contextWindow": model_info(model).context_window,
                "maxOutputTokens": model_info(model).max_output_tokens,
                "cacheCreationEphemeral5mInputTokens": u.cache_creation_5m_input_tokens,
                "cacheCreationEphemeral1hInputTokens": u.cache_creation_1h_input_tokens,
                "canonicalModel": model,
            }
            for model, u in self.by_model.items()
        }
