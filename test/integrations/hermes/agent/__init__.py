# TEST DOUBLE of hermes-agent's `agent` package (hermes-agent cannot be installed here: its
# dependencies are on no registry we reach). Only `agent.context_engine` is provided.
