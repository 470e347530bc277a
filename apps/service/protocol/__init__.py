"""The HTTP protocol, defined once: every request and response body of the service as a pydantic
model, which validates the requests (``RequestBody.parse``: a ``RequestError`` naming the field) and
gives the OpenAPI document's schemas (``schema.json_schema``), with the limits of the app's
``ServiceConfig`` in both (``types.ConfigRule``).

pydantic is used directly under Flask (not flask-openapi3 or spectree, which build one static schema
per model and answer with their own error shapes): the document states limits that depend on how the
server was started, and every error keeps the service's OpenAI-shaped body.
"""
