"""``chiplore mcp``: serve chiplore's tools to MCP clients (stdio by default, streamable HTTP with ``--http PORT``)."""

from __future__ import annotations

import json

import typer

from agent.cli.app import app
from core.errors import BadInputError


def parse_verify_options(text: str | None, option: str = "--verify-options") -> dict:
    """`text` as a JSON object of `agent.verifier.VerifyOptions` fields, checked against them now.

    Raises:
        BadInputError: not JSON, not an object, or a field the verifier does not take or a value out of range (the
            first one named).
    """
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"{option}: not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise BadInputError(f"{option}: expected a JSON object, e.g. '{{\"random_cases\": 1}}'")
    from pydantic import ValidationError

    from agent.verifier import VerifyOptions

    try:
        VerifyOptions(**value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "options"
        raise BadInputError(f"{option}: {where}: {err.get('msg', 'invalid')}") from None
    return value


def _warm_up() -> None:
    """Load the store, the embedding model and the keyword indexes once at start, so the first search_knowledge is
    as fast as the next ones. A failure here is left for the first tool call that needs the store to report."""
    import logging

    try:
        from knowledge.retrieval import _import_bm25s, default_store, keyword_index
        from knowledge.store import COLLECTIONS

        _import_bm25s()
        logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets DEBUG on import; the SDK would print it
        store = default_store()
        store.embed_texts(["warm up"])
        for name in COLLECTIONS:
            keyword_index(store, name)
    except Exception as exc:  # noqa: BLE001 - reported by the first tool that needs the store
        logging.getLogger("chiplore.mcp").info("warm-up skipped: %s", exc)


@app.command("mcp")
def mcp_cmd(
    http: int = typer.Option(None, "--http", min=1, max=65535,
                             help="serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio"),
    verify_options: str = typer.Option(None, "--verify-options",
                                       help="JSON of verifier options for every verification, e.g. "
                                            "'{\"random_cases\": 1}'"),
) -> None:
    """Serve the knowledge base, chip profiles, patterns, findings, the verifier and run management as MCP tools.

    Register it in an MCP client as a stdio server: command `chiplore`, args ["mcp"], env CHIPLORE_HOME.
    """
    import os

    from agent.mcp.server import build_server
    from agent.mcp.toolbox import Toolbox

    options = parse_verify_options(verify_options)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    _warm_up()  # before serving: chromadb's client must not be opened from two threads at once
    toolbox = Toolbox(options)
    server = build_server(toolbox)
    try:
        if http is None:
            server.run("stdio")
        else:
            typer.echo(f"chiplore MCP server on http://127.0.0.1:{http}/mcp", err=True)
            server.run("streamable-http", host="127.0.0.1", port=http)
    finally:
        toolbox.close()
