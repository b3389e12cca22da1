"""The REST API: ``uvicorn verityrag.api:app``, or ``create_app(pipeline)`` in your own server or tests."""

# Eager, unlike the other packages: the module ``verityrag.api.app`` shares its name with the app it
# makes, and an eager import binds the app last, whichever of the two a process imports first.
from verityrag.api.app import API_KEY_ENV, API_KEY_HEADER, MAX_BODY_BYTES, READ_KEY_ENV, app, create_app

__all__ = ["API_KEY_ENV", "API_KEY_HEADER", "MAX_BODY_BYTES", "READ_KEY_ENV", "app", "create_app"]
