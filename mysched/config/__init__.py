"""Reading configuration files: the libconfig parser that remembers lines, and validation
into the core's `Config` value."""
