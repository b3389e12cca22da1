"""The keep-alive race: clients that reuse a pooled connection after ~5 s idle, against two server settings.

Starts the real API server (``uvicorn verityrag.api:app``) twice on loopback: with uvicorn's
default keep-alive (5 s) and with the one ``verityrag.serve`` uses
(``API_KEEP_ALIVE_S``). Each time, ``--clients`` httpx clients (default pool settings: idle
connections expire after 5 s) each send ``GET /health``, wait 4.97-5.03 s, and send again,
``--rounds`` times. A request sent on a connection the server is closing at that instant
fails in transit; the client, not the server, should be the one to close an idle
connection. Prints the failures per setting; exits 1 if the product's setting has any.

    python scripts/keepalive_race_check.py --clients 200 --rounds 6
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import secrets
import sys
import tempfile
from pathlib import Path

import httpx

from verityrag.serve import API_KEEP_ALIVE_S, running_api_server

UVICORN_DEFAULT_S = 5


async def _client(url: str, rounds: int, rng: random.Random, tally: collections.Counter[str]) -> None:
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as client:
        for i in range(rounds):
            try:
                (await client.get("/health")).raise_for_status()
                tally["ok" if i == 0 else "reused ok"] += 1
            except httpx.HTTPError as exc:
                tally[type(exc).__name__] += 1
            await asyncio.sleep(rng.uniform(4.97, 5.03))


async def _run(url: str, clients: int, rounds: int) -> collections.Counter[str]:
    tally: collections.Counter[str] = collections.Counter()
    await asyncio.gather(*(_client(url, rounds, random.Random(i), tally) for i in range(clients)))
    return tally


def measure(keep_alive_s: int, clients: int, rounds: int) -> collections.Counter[str]:
    """Failures by kind with the server's keep-alive at ``keep_alive_s``."""
    with (
        tempfile.TemporaryDirectory(prefix="verityrag-keepalive-") as data_dir,
        running_api_server(Path(data_dir), secrets.token_urlsafe(8), keep_alive_s=keep_alive_s) as url,
    ):
        return asyncio.run(_run(url, clients, rounds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=200, help="concurrent clients (default 200)")
    parser.add_argument("--rounds", type=int, default=6, help="requests per client, ~5 s apart (default 6)")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.rounds < 2:
        parser.error("--clients must be >= 1 and --rounds >= 2")
    failed_product = 0
    for keep_alive_s in (UVICORN_DEFAULT_S, API_KEEP_ALIVE_S):
        tally = measure(keep_alive_s, args.clients, args.rounds)
        reuses = args.clients * (args.rounds - 1)
        failures = sum(n for kind, n in tally.items() if not kind.endswith("ok"))
        print(
            f"server keep-alive {keep_alive_s:3d} s: {failures} of {reuses} reuses after ~5 s idle failed "
            f"{dict(sorted(tally.items()))}",
            flush=True,
        )
        if keep_alive_s == API_KEEP_ALIVE_S:
            failed_product = failures
    return 1 if failed_product else 0


if __name__ == "__main__":
    sys.exit(main())
