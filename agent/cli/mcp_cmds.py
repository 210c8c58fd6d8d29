"""``chiplore mcp``: serve chiplore's tools to MCP clients (stdio by default, streamable HTTP with ``--http PORT``)."""

from __future__ import annotations

import json

import typer

from agent.cli.app import app
from core.errors import BadInputError


def parse_verify_options(text: str | None, option: str = "--verify-options") -> dict:
    """`text` as a JSON object of `agent.verifier.VerifyOptions` fields (checked when the first verification runs).

    Raises:
        BadInputError: not JSON, or not an object.
    """
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"{option}: not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise BadInputError(f"{option}: expected a JSON object, e.g. '{{\"random_cases\": 1}}'")
    return value


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
    import logging
    import os

    from agent.mcp.server import build_server
    from agent.mcp.toolbox import Toolbox

    options = parse_verify_options(verify_options)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs at DEBUG, which the SDK's handler would print
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
