"""Reading configuration files: the libconfig parser that remembers lines, and validation
into the core's immutable `Config` (`mysched.core.settings`)."""

from mysched.config.parse import in_file_order
from mysched.config.validate import build_config, config_from_text, load_config, validate

__all__ = ["build_config", "config_from_text", "in_file_order", "load_config", "validate"]
