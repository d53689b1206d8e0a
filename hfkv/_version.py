"""The version of hfkv, in one place (the package, the CLI and the Hub client's user agent read it)."""

__version__ = "0.1.0"
