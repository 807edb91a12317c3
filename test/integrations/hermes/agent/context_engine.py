"""TEST DOUBLE of hermes-agent's ``agent.context_engine.ContextEngine``.

hermes-agent cannot be installed on these machines, so the plugin is tested against this
stand-in, written here from hermes' published interface (NousResearch/hermes-agent,
``agent/context_engine.py``): the abstract members, the token fields the host reads, and the
defaults of the optional hooks. It holds no behaviour of hermes beyond those defaults.
"""

import json
from abc import ABC, abstractmethod
from typing import Any, Dict, List, Optional


class ContextEngine(ABC):
    @property
    @abstractmethod
    def name(self) -> str: ...

    last_prompt_tokens: int = 0
    last_completion_tokens: int = 0
    last_total_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0
    threshold_percent: float = 0.75
    protect_first_n: int = 3
    protect_last_n: int = 6

    @abstractmethod
    def update_from_response(self, usage: Dict[str, Any]) -> None: ...

    @abstractmethod
    def should_compress(self, prompt_tokens: Optional[int] = None) -> bool: ...

    @abstractmethod
    def compress(self, messages: List[Dict[str, Any]], current_tokens: Optional[int] = None, focus_topic: Optional[str] = None, force: bool = False, memory_context: str = "") -> List[Dict[str, Any]]: ...

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):
        return None

    def on_turn_complete(self, messages, usage=None, **kwargs) -> None:
        return None

    def on_session_start(self, session_id: str, **kwargs) -> None:
        return None

    def on_session_end(self, session_id: str, messages) -> None:
        return None

    def on_session_reset(self) -> None:
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0

    def get_tool_schemas(self):
        return []

    def handle_tool_call(self, name: str, args, **kwargs) -> str:
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def get_status(self):
        last = max(self.last_prompt_tokens, 0)
        return {
            "last_prompt_tokens": last,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "usage_percent": min(100, last / self.context_length * 100) if self.context_length else 0,
            "compression_count": self.compression_count,
        }

    def update_model(self, model: str, context_length: int, base_url: str = "", api_key: str = "", provider: str = "", api_mode: str = "") -> None:
        self.context_length = context_length
        self.threshold_tokens = int(context_length * self.threshold_percent)
