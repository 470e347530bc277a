"""The HTTP protocol, defined once: every request and response body of the service as a pydantic model.

The same models validate the requests (``RequestBody.parse``: a ``RequestError`` naming the field,
worded as the service always has, see ``errors``) and give the OpenAPI document's schemas
(``schema.json_schema``, assembled by ``..openapi``). Layout:

- ``types``: the base request model, the field rules (``Bounds``, ``NotBlank``, ``Neutral``) and
  ``ConfigRule`` (limits and names that come from the app's ``ServiceConfig``);
- ``errors``: ``RequestError``, how a ``ValidationError`` becomes one, and decoding a JSON body;
- ``chat`` (messages and prompts), ``completions``, ``grammar``, ``rag``: the request bodies
  (``openai_fields``: the completion bodies' field types; a validated completion body is the request
  the endpoints run);
- ``responses``: the answers, streamed event payloads and the error body;
- ``schema``: a model's JSON Schema for one config (inlined, config filled in, ``null`` as absent).

Why pydantic directly under Flask rather than flask-openapi3 or spectree: both extensions build one
static schema per model class and validate in a decorator with their own error answers (a 422 or a
list of pydantic's messages), and they add their own documentation routes. This service documents
limits that depend on how it was started (``max_tokens_limit``, the served model names, the RAG
drafters a datastore enables), answers a bad field with a 400 in OpenAI's error shape whose wording
clients and tests rely on, sends a too-long grammar text a 413, streams server-sent events, and
serves exactly the routes its document lists. Calling ``model_validate`` in the routes and
assembling ``model_json_schema`` into the document takes about a hundred lines (``schema``,
``..openapi``) and keeps all of that; the extensions would need as much code to undo their defaults.
"""
