"""One service, three doors, one engine.

- In the chat server (``python -m app serve``): :func:`install_on_chainlit` puts the API's routes
  (``/api/v1``, ``/v1``, ``/api/mcp``, ``/api/docs``) on Chainlit's own FastAPI app, ahead of its
  catch-all page route, over the chat's :class:`~app.relay.Backend`: one assistant, one model in
  memory, one queue for chat and API questions alike.
- Alone (``python -m app api``): the same routes on an app of their own (uvicorn), with their own
  Backend and the same chat-history database.
- ``python -m app mcp``: the MCP tools over stdio, for a client that starts the server itself.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from settings.config import REPO_ROOT, Config

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import ASGIApp, Receive, Scope, Send

    from app.api.context import ApiContext
    from app.history.store import HistoryStore
    from app.relay import AssistantLike, Backend

log = logging.getLogger("app.api")

API_PREFIXES = ("/api/", "/v1/")
DOCS_URL = "/api/docs"
OPENAPI_URL = "/api/openapi.json"
DOCS_ASSETS = "/api/docs/assets"


def add_offline_docs(app: FastAPI) -> None:
    """Swagger UI at /api/docs from the swagger-ui-bundle-v2 package's own files: the page
    fetches nothing from another host (FastAPI's default loads it from a CDN)."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from starlette.responses import HTMLResponse
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles
    from swagger_ui_bundle import swagger_ui_path

    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=OPENAPI_URL, title="PubMed assistant API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url="/favicon")

    app.router.routes.append(Mount(DOCS_ASSETS, app=StaticFiles(directory=swagger_ui_path),
                                   name="api-docs-assets"))
    app.add_api_route(DOCS_URL, docs, include_in_schema=False, response_class=HTMLResponse)


def default_factory(cfg: Config) -> Callable[[], AssistantLike]:
    def make() -> AssistantLike:
        from chains.assistant import Assistant

        assistant = Assistant.from_config(cfg)
        llm = assistant.llm  # loaded now rather than during the first answer
        log.info("language model loaded: %s (llm.backend: %s)", type(llm).__name__,
                 cfg.llm.backend)
        return assistant

    return make


def make_context(cfg: Config, backend: Backend, host: str,
                 store: Callable[[], HistoryStore | None], *,
                 wait_for_load: bool = False) -> ApiContext:
    from app.api.access import Access
    from app.api.context import ApiContext
    from app.api.conversations import Conversations
    from app.api.engine import Engine
    from app.history.turns import model_label

    engine = Engine(cfg, backend, model_label=model_label(cfg), wait_for_load=wait_for_load)
    return ApiContext(cfg=cfg, engine=engine, access=Access(cfg, host),
                      conversations=Conversations(store, cfg))


def service_app() -> FastAPI:
    """The API's routes, documented (OpenAPI at /api/openapi.json, docs at /api/docs)."""
    from fastapi import FastAPI

    from app.api import mcp_server, openai_compat, routes

    app = FastAPI(title="PubMed assistant API", version="1",
                  description="Questions answered from indexed PubMed abstracts, with citations "
                  "(docs/api.md). Keys: `Authorization: Bearer KEY` on a shared server.",
                  docs_url=None, openapi_url=OPENAPI_URL, redoc_url=None)
    add_offline_docs(app)
    app.include_router(routes.router)
    app.include_router(openai_compat.router)
    app.router.routes.append(mcp_server.http_route(mcp_server.build_mcp()))
    return app


class ApiCors:
    """CORS for the API's paths only, from ``api.cors_origins`` (empty: no page of another
    origin may read an answer; the chat's own CORS stays Chainlit's)."""

    def __init__(self, app: ASGIApp, origins: list[str]) -> None:
        self.app = app
        self.origins = set(origins)

    def _allowed(self, origin: str) -> bool:
        return "*" in self.origins or origin in self.origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.datastructures import Headers, MutableHeaders
        from starlette.responses import Response

        if scope["type"] != "http" or not scope["path"].startswith(API_PREFIXES):
            await self.app(scope, receive, send)
            return
        origin = Headers(scope=scope).get("origin")
        if origin is None or not self._allowed(origin):
            await self.app(scope, receive, send)
            return
        cors = {"Access-Control-Allow-Origin": origin, "Vary": "Origin",
                "Access-Control-Expose-Headers": "Retry-After"}
        if scope["method"] == "OPTIONS":
            await Response(status_code=204, headers={
                **cors, "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
                "Access-Control-Allow-Headers": "Authorization, Content-Type, X-API-Key, "
                "Mcp-Session-Id, Mcp-Protocol-Version", "Access-Control-Max-Age": "600"})(
                    scope, receive, send)
            return

        async def with_cors(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for k, v in cors.items():
                    headers[k] = v
            await send(message)

        await self.app(scope, receive, with_cors)


def install_on_chainlit(get_backend: Callable[[], Backend], get_config: Callable[[], Config]
                        ) -> None:
    """Serve the API from the chat server, on its backend (called by app/ui.py when served)."""
    import chainlit.server as cl_server

    from app.api.context import set_context
    from app.history import current_store

    cfg = get_config()
    if not cfg.api.enabled:
        return
    host = os.environ.get("CHAINLIT_HOST") or cfg.ui.host
    set_context(make_context(cfg, get_backend(), host, current_store))
    service = service_app()
    cl_server.app.router.routes[0:0] = list(service.routes)  # ahead of the page's catch-all
    cl_server.app.add_middleware(ApiCors, origins=cfg.api.cors_origins)
    log.info("API: /api/v1, OpenAI-compatible /v1, MCP %s, docs %s", "/api/mcp", DOCS_URL)


# ---- `python -m app api` ----------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None, help="address to listen on (default: ui.host)")
    parser.add_argument("--port", type=int, default=None,
                        help="port to listen on (default: ui.port, 8000)")


def _prepare_chainlit_env() -> None:
    """The history store is Chainlit's data layer: its settings come from this repo's folder."""
    from app.serve import REMOTE_DATA_VARS

    os.environ.setdefault("CHAINLIT_APP_ROOT", str(REPO_ROOT))
    for key in REMOTE_DATA_VARS:
        os.environ.pop(key, None)


def standalone_app(cfg: Config, host: str) -> FastAPI:
    import asyncio
    from contextlib import asynccontextmanager

    from app.api.context import set_context
    from app.relay import Backend

    _prepare_chainlit_env()
    backend = Backend(default_factory(cfg))
    store = None
    if cfg.history.enabled:
        from app.history.store import HistoryStore

        store = HistoryStore.from_config(cfg)
    set_context(make_context(cfg, backend, host, lambda: store))
    app = service_app()

    @asynccontextmanager
    async def lifespan(_: Any) -> Any:
        async def load() -> None:
            try:
                await backend.assistant()
            except Exception as err:  # said by /ready and every 503
                log.warning("assistant not loaded at startup: %s", err)

        task = asyncio.get_running_loop().create_task(load())
        yield
        task.cancel()

    app.router.lifespan_context = lifespan

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(ApiCors, origins=cfg.api.cors_origins)
    return app


def run(cfg: Config, args: argparse.Namespace) -> int:
    import uvicorn

    from app.serve import address, check_port_free

    host, port = address(cfg, args)
    check_port_free(host, port)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    app = standalone_app(cfg, host)
    print(f"PubMed assistant API at http://{host}:{port}/api/v1 (docs: {DOCS_URL}; OpenAI "
          f"base URL: /v1; MCP: /api/mcp)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0


__all__ = ["ApiCors", "install_on_chainlit", "service_app", "standalone_app"]
