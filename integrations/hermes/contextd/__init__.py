"""contextd context engine for hermes-agent.

Install: ``contextd install hermes`` copies this directory to ``$HERMES_HOME/plugins/contextd/``;
then set ``context.engine: contextd`` in hermes' ``config.yaml``. hermes finds the engine through
``register(ctx)`` (``ctx.register_context_engine``) or, failing that, the ContextEngine subclass.
The JSON-RPC client (``client.py``) is stdlib-only and usable by any Python agent.
"""

from .engine import ContextdEngine

__all__ = ["ContextdEngine", "register"]


def register(ctx):
    """hermes plugin entry point: hand hermes one ContextdEngine."""
    ctx.register_context_engine(ContextdEngine())
