"""Typed httpx client for the mrecd service (sync ``Client`` and async ``AsyncClient``).

The client depends only on the model, the codecs and httpx; it arrives with
the HTTP service.
"""

__all__: list[str] = []
