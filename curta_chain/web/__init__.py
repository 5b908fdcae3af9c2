"""The web page (built from sdk/js/web, shipped in ``static/``) and ``curta-chain web``."""

from curta_chain.web.server import STATIC, WebServer, start_web_server

__all__ = ["STATIC", "WebServer", "start_web_server"]
