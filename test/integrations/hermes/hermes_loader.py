"""TEST DOUBLE of how hermes-agent loads a user context engine (hermes cannot be installed here).

Follows the published convention (NousResearch/hermes-agent ``plugins/context_engine/__init__.py``
and ``plugins/plugin_loader.py``), written here, not copied: an engine lives in
``$HERMES_HOME/plugins/<name>/`` with ``__init__.py`` and ``plugin.yaml``; the directory counts as
an engine when ``__init__.py`` mentions ``register_context_engine`` or ``ContextEngine``; the
package is imported by path under a synthetic parent package with its sibling modules
registered first (so relative imports work); the engine is what ``register(ctx)`` hands to
``ctx.register_context_engine``, else an instance of the first ContextEngine subclass found.
"""

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Optional

from agent.context_engine import ContextEngine

USER_NAMESPACE = "_hermes_user_context_engine_double"


class EngineCollector:
    def __init__(self):
        self.engine = None

    def register_context_engine(self, engine):
        self.engine = engine

    def register_command(self, *args, **kwargs):
        pass

    def register_tool(self, *args, **kwargs):
        pass


def is_context_engine_dir(path: Path) -> bool:
    try:
        source = (path / "__init__.py").read_text(encoding="utf-8-sig")[:8192]
    except OSError:
        return False
    return "register_context_engine" in source or "ContextEngine" in source


def _module(name: str, file: Path, search: Optional[list] = None):
    spec = importlib.util.spec_from_file_location(name, str(file), submodule_search_locations=search)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    return mod


def import_engine_package(plugin_dir: Path, use_register: bool = True):
    """Import ``plugin_dir`` the way hermes does; returns the module."""
    if USER_NAMESPACE not in sys.modules:
        spec = importlib.machinery.ModuleSpec(USER_NAMESPACE, None, is_package=True)
        spec.submodule_search_locations = []
        sys.modules[USER_NAMESPACE] = importlib.util.module_from_spec(spec)
    name = f"{USER_NAMESPACE}.{plugin_dir.name}_{abs(hash(str(plugin_dir))) % 10**8}"
    mod = _module(name, plugin_dir / "__init__.py", [str(plugin_dir)])
    for sub in sorted(plugin_dir.glob("*.py")):
        if sub.name == "__init__.py" or f"{name}.{sub.stem}" in sys.modules:
            continue
        child = _module(f"{name}.{sub.stem}", sub)
        child.__spec__.loader.exec_module(child)
    mod.__spec__.loader.exec_module(mod)
    return mod


def load_engine(plugin_dir: Path, use_register: bool = True):
    """The engine hermes would get from ``plugin_dir`` (``register(ctx)`` first, then subclass)."""
    if not is_context_engine_dir(plugin_dir):
        return None
    mod = import_engine_package(plugin_dir)
    if use_register and hasattr(mod, "register"):
        ctx = EngineCollector()
        mod.register(ctx)
        if ctx.engine is not None:
            return ctx.engine
    for attr in dir(mod):
        value = getattr(mod, attr)
        if isinstance(value, type) and issubclass(value, ContextEngine) and value is not ContextEngine:
            return value()
    return None


def find_user_engine(hermes_home: Path, name: str):
    """``context.engine: <name>`` resolved against ``$HERMES_HOME/plugins/<name>/``."""
    d = hermes_home / "plugins" / name
    return load_engine(d) if d.is_dir() and (d / "__init__.py").exists() else None
