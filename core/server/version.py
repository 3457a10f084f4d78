"""Versions the server reports."""

from importlib.metadata import PackageNotFoundError, version

# The Hindsight API this server's `/v1/default/...` paths follow.
HINDSIGHT_API_VERSION = "1.1.0"

try:
    ENGRAM_VERSION = version("engram-studio")
except PackageNotFoundError:  # running from a source tree
    ENGRAM_VERSION = "0.1.0"
