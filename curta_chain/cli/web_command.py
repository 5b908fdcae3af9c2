"""``curta-chain web``: serve the page that verifies a model from the chain and runs it."""

import argparse
from pathlib import Path

from curta_chain.cli.localnet_command import _port
from curta_chain.cli.options import add_output_option, emit, parse_pubkey

WEB_PORT = 8890


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``web`` subcommand."""
    parser = subparsers.add_parser(
        "web",
        help="serve the browser page: verify a model from the chain, run it, replay a run",
        description="Serve the page (shipped in this package) on 127.0.0.1, with a relay of "
        "its JSON-RPC calls to the cluster -u names. The page also takes ?url=...&model=... "
        "and a dropped .curta file. Ctrl-C stops it.",
    )
    parser.add_argument(
        "--port", type=_port, default=WEB_PORT, help=f"HTTP port (default {WEB_PORT}; 0 picks one)"
    )
    parser.add_argument(
        "-u", "--url", metavar="URL_OR_MONIKER", help="the cluster the page reads (default: the "
        "config's json_rpc_url, else localhost)",
    )  # fmt: skip
    parser.add_argument("--model", metavar="ADDRESS", help="the model the page opens with")
    parser.add_argument(
        "--artifact", type=Path, metavar="FILE", help="a .curta file the page opens as if it "
        "were dropped on it (checked against --model when both are given; with neither, the "
        "demo model of curta_chain/demo, which a model named in the page's address is never "
        "checked against: it is verified from the chain alone)",
    )  # fmt: skip
    add_output_option(parser)
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    import sys
    from urllib.parse import urlencode

    from curta_chain.artifact import read_artifact
    from curta_chain.cli.solana_config import read_cli_config, resolve_url
    from curta_chain.errors import ConfigError
    from curta_chain.web import WebServer
    from curta_chain.web.server import LocalArtifact

    cluster = resolve_url(args.url, read_cli_config(may_be_new=True))
    if args.model is not None:
        parse_pubkey(args.model, "--model")
    artifact: Path | LocalArtifact | None = args.artifact
    if args.artifact is not None:
        read_artifact(args.artifact)  # a file the page would refuse is refused here, first
    elif args.model is None:
        # Nothing named: the page opens the demo model, converted as `curta-chain convert` does;
        # a model the page is then opened at (?model=) is verified from the chain alone.
        from curta_chain.artifact import convert_llama2c
        from curta_chain.demo import DEMO_MODEL, DEMO_TOKENIZER

        demo = convert_llama2c(DEMO_MODEL, DEMO_TOKENIZER).data
        artifact = LocalArtifact("demo.curta", demo, demo=True)
    try:
        server = WebServer(cluster, args.model, args.port, artifact=artifact)
    except OSError as exc:
        raise ConfigError(f"--port {args.port}: cannot listen on it: {exc.strerror}") from exc
    query = urlencode({"url": cluster, **({"model": args.model} if args.model else {})})
    page = f"{server.url}?{query}"
    # Without a node the page still serves and runs its file; it says so, and so do we.
    absent = _node_absent(cluster)
    if not emit(args, {"page": page, "cluster": cluster, "model": args.model, "node": not absent}):
        print(f"Serving the page at {page} (reading {cluster}); Ctrl-C stops it")
        if absent:
            print(
                f"{absent}; the page serves anyway (a file runs without a node) and reads the "
                "chain once one answers",
                file=sys.stderr,
            )
    sys.stdout.flush()  # whoever started the server waits for this line
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def _node_absent(url: str) -> str | None:
    """Why no node answers JSON-RPC at ``url`` (one line), or None when one does."""
    import asyncio

    from curta_chain.chain.rpc import RpcClient
    from curta_chain.chain.transport import HttpTransport
    from curta_chain.errors import CurtaError

    async def ask() -> None:
        client = RpcClient(HttpTransport(url), "confirmed")
        try:
            await client.genesis_hash()
        finally:
            await client.aclose()

    try:
        asyncio.run(ask())
    except CurtaError as exc:  # refused, unresolved, or an answer that is not JSON-RPC
        return str(exc)
    return None
