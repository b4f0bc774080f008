"""The sidecar daemon ``dsbra run``: observe, decide, act, persist, export (docs/daemon.md)."""
