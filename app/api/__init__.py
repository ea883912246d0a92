"""The assistant as a service: the JSON API (``/api/v1``), the OpenAI-compatible endpoint
(``/v1``) and the MCP server (``/api/mcp``, or stdio), over the chat's one engine (docs/api.md)."""
