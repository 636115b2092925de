#!/usr/bin/env python3
"""Outside-in API delivery harness for driftwatch (issue 39's Svix-style harness).

An aiohttp client posts test events through `POST /api/v1/endpoints/{id}/test` of a real
`driftwatch serve` process, while an aiohttp receiver in this process counts what the worker
delivers; the same client's raw rate straight against the same receiver is measured in the
same round, so every rate is also given as a ratio of it.

    python3 bench/harness/api.py --driftwatch target/release/driftwatch --database sqlite
    python3 bench/harness/api.py --driftwatch ... --database postgres --endpoints 10
    python3 bench/harness/api.py --driftwatch ... --database postgres --rate 200 --seconds 30

Each round starts its own driftwatch on a temporary directory (SQLite) or on a fresh
PostgreSQL database it creates and drops, and removes all of it afterwards, also on failure
or Ctrl-C. Standard library and aiohttp only (bench/harness/requirements.txt).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

CLK_TCK = os.sysconf("SC_CLK_TCK")
RAW_BODY = json.dumps({"type": "endpoint.test", "data": {"note": "a body the size of a small event"}}).encode()


class HarnessError(Exception):
    """A run that cannot be trusted: said loudly, never averaged in."""


def log(msg: str) -> None:
    print(f"# {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- CPU from /proc


def proc_stat(pid: int | str) -> list[str] | None:
    """Fields of /proc/PID/stat from field 3 (state) on, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads)."""
    f = proc_stat(pid)
    if f is None:
        return float("nan")
    return (int(f[11]) + int(f[12])) / CLK_TCK


BACKEND = re.compile(r"^postgres: (?:[^:]+: )?(\S+) (\S+) (?:\S+\(\d+\)|\[local\])")


def postgres_cpu_seconds(database: str | None) -> tuple[float, float]:
    """CPU of the PostgreSQL server, (all, mine).

    all: every `postgres` process's utime + stime + cutime + cstime (the postmaster's cutime
    holds backends that exited, so a backend ending inside the window still counts).
    mine: the backends connected to `database` plus the server's shared processes (postmaster,
    checkpointer, WAL writer, ...), without backends of other databases: what other sessions
    on a shared server add is left out, but so are backends that exited in the window.
    """
    total = mine = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "postgres":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = proc_stat(pid)
        if fields is None:
            continue
        own = (int(fields[11]) + int(fields[12])) / CLK_TCK
        total += own + (int(fields[13]) + int(fields[14])) / CLK_TCK
        m = BACKEND.match(cmdline)
        if m is None or (database is not None and m.group(2) == database):
            mine += own
    return total, mine


def machine_busy_seconds() -> float:
    """CPU-seconds the whole machine spent busy (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / CLK_TCK  # without idle and iowait


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


# ---------------------------------------------------------------- the receiver


class Receiver:
    """Counts arrivals: per webhook the endpoint (from the path), `webhook-id` and time."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[float, int, str]] = []  # (monotonic, endpoint index, webhook-id)
        self.raw = 0
        self._waiters: list[tuple[int, asyncio.Future]] = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hook/{k}", self._hook)
        app.router.add_post("/raw", self._raw)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # noqa: SLF001 (aiohttp has no public getter)

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    async def _hook(self, request: web.Request) -> web.Response:
        await request.read()
        self.arrivals.append((time.monotonic(), int(request.match_info["k"]), request.headers.get("webhook-id", "")))
        self._wake()
        return web.Response(text="ok")

    async def _raw(self, request: web.Request) -> web.Response:
        await request.read()
        self.raw += 1
        return web.Response(text="ok")

    def _wake(self) -> None:
        n = len(self.arrivals)
        for target, fut in self._waiters:
            if n >= target and not fut.done():
                fut.set_result(None)
        self._waiters = [(t, f) for t, f in self._waiters if not f.done()]

    async def wait_for(self, target: int, timeout: float, failed: asyncio.Future | None = None) -> None:
        """Resolves once `target` webhooks have arrived in all; HarnessError after `timeout`."""
        if len(self.arrivals) >= target:
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((target, fut))
        try:
            await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise HarnessError(
                f"{target - len(self.arrivals)} of {target} deliveries did not arrive within {timeout:.0f} s "
                f"({len(self.arrivals)} arrived)"
            ) from None


# ---------------------------------------------------------------- driftwatch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Driftwatch:
    """One `driftwatch serve` on its own database; `close()` undoes everything it made."""

    binary: str
    database: str  # sqlite | postgres
    pg_url: str
    rate_limit_per_minute: int
    extra_env: dict[str, str]
    keep_log: str | None = None
    tmp: str = ""
    db_name: str | None = None
    db_url: str = ""
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    base: str = ""
    log_path: str = ""
    _log: object = None

    def psql(self, sql: str) -> None:
        r = subprocess.run(["psql", self.pg_url, "-qAtc", sql], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise HarnessError(f"psql {sql!r}: {r.stderr.strip()}")

    def start(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="dw-harness-")
        if self.database == "postgres":
            self.db_name = f"h_{secrets.token_hex(6)}"
            self.psql(f"CREATE DATABASE {self.db_name}")
            u = urllib.parse.urlsplit(self.pg_url)
            self.db_url = urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + self.db_name, u.query, ""))
        else:
            self.db_url = f"sqlite://{self.tmp}/driftwatch.db"
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
        env.update(
            DRIFTWATCH_DATABASE_URL=self.db_url,
            DRIFTWATCH_LISTEN=f"127.0.0.1:{port}",
            DRIFTWATCH_ALLOW_PRIVATE_TARGETS="true",
            DRIFTWATCH_LOG="warn",
            DRIFTWATCH_RATE_LIMIT_PER_MINUTE=str(self.rate_limit_per_minute),
            DRIFTWATCH_SECRET_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
        )
        env.update(self.extra_env)
        self.env = env
        self.log_path = self.keep_log or os.path.join(self.tmp, "driftwatch.log")
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (closed in close())
        # Its own session: a Ctrl-C on the terminal reaches the harness, which stops it.
        self.proc = subprocess.Popen(
            [self.binary, "serve"], env=env, cwd=self.tmp, stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=self._log, start_new_session=True,
        )

    def cli(self, *args: str) -> str:
        r = subprocess.run([self.binary, *args], env=self.env, cwd=self.tmp, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise HarnessError(f"driftwatch {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        return r.stdout

    def tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-3000:].decode(errors="replace")
        except OSError:
            return ""

    async def ready(self, session: aiohttp.ClientSession, timeout: float = 60) -> None:
        """Waits for /readyz to answer 200 (migrations applied), or the process to die."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise HarnessError(f"driftwatch serve exited {self.proc.returncode}:\n{self.tail()}")
            try:
                async with session.get(self.base + "/readyz") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise HarnessError(f"driftwatch serve not ready after {timeout:.0f} s:\n{self.tail()}")
            await asyncio.sleep(0.05)  # polling readiness: no event to await from outside

    def close(self) -> None:
        """Idempotent: stop the server, drop the database, remove the temporary directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.db_name is not None:
            try:
                self.psql(f"DROP DATABASE IF EXISTS {self.db_name} WITH (FORCE)")
            except Exception as e:  # noqa: BLE001
                log(f"could not drop database {self.db_name}: {e}")
            self.db_name = None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = ""


# ---------------------------------------------------------------- clients


@dataclass
class Sent:
    seq: int
    endpoint: int
    sent: float
    accepted: float


class ApiFailure(Exception):
    pass


async def post_raw(session: aiohttp.ClientSession, url: str, count: int, connections: int) -> None:
    left = iter(range(count))

    async def one_client() -> None:
        for _ in left:
            async with session.post(url, data=RAW_BODY, headers={"content-type": "application/json"}) as r:
                await r.read()
                if r.status >= 300:
                    raise HarnessError(f"the receiver answered {r.status}")

    await asyncio.gather(*(one_client() for _ in range(connections)))


class ApiClient:
    """Posts test events; keeps each one's send and accept time by delivery id."""

    def __init__(self, session: aiohttp.ClientSession, base: str, token: str, endpoint_ids: list[str]) -> None:
        self.session = session
        self.urls = [f"{base}/api/v1/endpoints/{e}/test" for e in endpoint_ids]
        self.headers = {"authorization": f"Bearer {token}"}
        self.sent: dict[str, Sent] = {}
        self.statuses: dict[int, int] = {}
        self.first_error: str | None = None

    async def post(self, seq: int, k: int) -> None:
        t0 = time.monotonic()
        async with self.session.post(self.urls[k], headers=self.headers) as r:
            body = await r.read()
            t1 = time.monotonic()
        self.statuses[r.status] = self.statuses.get(r.status, 0) + 1
        if not 200 <= r.status < 300:
            if self.first_error is None:
                self.first_error = f"POST {self.urls[k]} answered {r.status}: {body[:500].decode(errors='replace')}"
            raise ApiFailure(self.first_error)
        did = json.loads(body)["id"]
        self.sent[did] = Sent(seq, k, t0, t1)

    async def burst(self, count: int, connections: int, first_seq: int = 0) -> None:
        """`count` posts as fast as `connections` clients go, round-robin over the endpoints."""
        left = iter(range(first_seq, first_seq + count))
        stop = asyncio.Event()

        async def one_client() -> None:
            for seq in left:
                if stop.is_set():
                    return
                try:
                    await self.post(seq, seq % len(self.urls))
                except Exception:
                    stop.set()
                    raise

        results = await asyncio.gather(*(one_client() for _ in range(connections)), return_exceptions=True)
        self.raise_first(results)

    async def open_loop(self, rate: float, seconds: float, first_seq: int, connections: int) -> float:
        """One post every 1/rate s for `seconds` (at most `connections` in flight); returns the
        rate actually offered (lower than asked when the API cannot keep up)."""
        count = int(rate * seconds)
        slots = asyncio.Semaphore(connections)
        tasks = []
        start = time.monotonic()
        failed = False

        async def one(seq: int) -> None:
            nonlocal failed
            try:
                await self.post(seq, seq % len(self.urls))
            except Exception:
                failed = True
                raise
            finally:
                slots.release()

        for i in range(count):
            if failed:
                break
            due = start + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)  # the schedule itself, not synchronisation
            await slots.acquire()
            tasks.append(asyncio.create_task(one(first_seq + i)))
        offered_for = time.monotonic() - start
        results = await asyncio.gather(*tasks, return_exceptions=True)
        self.raise_first(results)
        return len(tasks) / offered_for if offered_for > 0 else float("nan")

    def raise_first(self, results: list) -> None:
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            other = "; ".join(f"{s}: {n}" for s, n in sorted(self.statuses.items()))
            first = self.first_error or repr(errors[0])
            raise HarnessError(f"the API failed ({other}); first error: {first}")


# ---------------------------------------------------------------- one run


def pct(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, round((len(sorted_values) - 1) * q))]


def inversions(arrivals: list[tuple[float, int, str]], sent: dict[str, Sent]) -> tuple[int, int]:
    """Per endpoint, arrivals that came before a delivery to the same endpoint accepted earlier.

    strict: the later arrival's POST had been answered before this one's POST was even sent
    (an order the client did establish); by accept: its POST was answered first (with 64
    requests in flight, two concurrent requests have no order of their own, so this counts more).
    """
    per: dict[int, list[Sent]] = {}
    for _t, k, wid in arrivals:  # arrival order
        s = sent.get(wid)
        if s is not None:
            per.setdefault(k, []).append(s)
    strict = loose = 0
    for seq in per.values():
        earliest_later_accept = float("inf")
        for s in reversed(seq):
            if earliest_later_accept < s.sent:
                strict += 1
            if earliest_later_accept < s.accepted:
                loose += 1
            earliest_later_accept = min(earliest_later_accept, s.accepted)
    return strict, loose


async def create_endpoints(session: aiohttp.ClientSession, dw: Driftwatch, token: str, port: int, k: int) -> list[str]:
    ids = []
    for i in range(k):
        body = {"url": f"http://127.0.0.1:{port}/hook/{i}", "description": f"harness {i}"}
        async with session.post(
            dw.base + "/api/v1/endpoints", json=body, headers={"authorization": f"Bearer {token}"}
        ) as r:
            text = await r.text()
            if r.status not in (200, 201):
                raise HarnessError(f"POST /api/v1/endpoints answered {r.status}: {text[:500]}")
            ids.append(json.loads(text)["id"])
    return ids


async def one_run(args: argparse.Namespace, round_no: int) -> dict[str, float]:
    n, c, k = args.events, args.connections, args.endpoints
    open_loop = args.rate is not None
    if open_loop:
        n = int(args.rate * args.seconds)
    receiver = Receiver()
    dw = Driftwatch(
        args.driftwatch, args.database, args.pg_url, args.rate_limit_per_minute,
        dict(e.split("=", 1) for e in args.env), None,
    )
    connector = aiohttp.TCPConnector(limit=c, limit_per_host=c)
    session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=args.request_timeout))
    fig: dict[str, float] = {}
    try:
        await receiver.start()
        # The raw client limit: the same client straight at the same receiver.
        raw_url = f"http://127.0.0.1:{receiver.port}/raw"
        if not open_loop:
            await post_raw(session, raw_url, c * 4, c)  # warm the connections
            t0 = time.monotonic()
            await post_raw(session, raw_url, n, c)
            fig["raw/s"] = n / (time.monotonic() - t0)

        os.makedirs(args.logs, exist_ok=True)
        dw.keep_log = os.path.join(args.logs, f"driftwatch-{args.database}-{os.getpid()}-r{round_no}.log")
        dw.start()
        log(f"round {round_no}: driftwatch pid {dw.proc.pid} on {args.database} "
            f"({dw.db_name or dw.db_url}), stderr in {dw.log_path}")
        await dw.ready(session)
        dw.cli("account", "create", "harness")
        token = dw.cli("token", "create", "--account", "harness", "--name", "harness").strip().splitlines()[-1].strip()
        ids = await create_endpoints(session, dw, token, receiver.port, k)
        api = ApiClient(session, dw.base, token, ids)

        # Warm-up: one request per connection, through to arrival; not counted.
        await api.burst(c, c)
        await receiver.wait_for(c, args.timeout)
        warm_ids = set(api.sent)
        warm = len(receiver.arrivals)

        dw_cpu0 = cpu_seconds(dw.proc.pid)
        pg0 = postgres_cpu_seconds(dw.db_name) if args.database == "postgres" else None
        own0 = own_cpu_seconds()
        busy0 = machine_busy_seconds()
        t_start = time.monotonic()
        if open_loop:
            fig["offered/s"] = await api.open_loop(args.rate, args.seconds, 0, c)
        else:
            await api.burst(n, c)
        t_accepted = time.monotonic()
        log(f"round {round_no}: {n} accepted in {t_accepted - t_start:.1f} s, "
            f"{len(receiver.arrivals) - warm} delivered so far; waiting for the rest")
        await receiver.wait_for(warm + n, args.timeout)
        t_last = receiver.arrivals[-1][0]
        dw_cpu = cpu_seconds(dw.proc.pid) - dw_cpu0
        own = own_cpu_seconds() - own0
        busy = machine_busy_seconds() - busy0
        t_end = time.monotonic()
        if pg0 is not None:
            pg1 = postgres_cpu_seconds(dw.db_name)
            pg_all, pg_mine = pg1[0] - pg0[0], pg1[1] - pg0[1]
        if dw.proc.poll() is not None:
            raise HarnessError(f"driftwatch exited {dw.proc.returncode} during the run:\n{dw.tail()}")

        # Match arrivals to requests by delivery id.
        measured = {d: s for d, s in api.sent.items() if d not in warm_ids}
        seen: set[str] = set()
        lat: list[float] = []
        dup = unknown = 0
        for t, _k, wid in receiver.arrivals[warm:]:
            if wid in seen:
                dup += 1
                continue
            seen.add(wid)
            s = measured.get(wid)
            if s is None:
                unknown += 1
                continue
            lat.append((t - s.sent) * 1000)
        if dup or unknown or len(lat) != n:
            raise HarnessError(
                f"arrivals do not match the accepted deliveries: {len(lat)} of {n} matched by webhook-id, "
                f"{dup} duplicates, {unknown} unknown ids"
            )
        lat.sort()
        strict, loose = inversions(receiver.arrivals[warm:], measured)

        fig["accepted/s"] = n / (t_accepted - t_start)
        fig["delivered/s"] = n / (t_last - t_start)
        if "raw/s" in fig:
            fig["delivered/raw"] = fig["delivered/s"] / fig["raw/s"]
        fig["p50 ms"] = pct(lat, 0.5)
        fig["p90 ms"] = pct(lat, 0.9)
        fig["p99 ms"] = pct(lat, 0.99)
        fig["max ms"] = lat[-1]
        fig["inversions strict"] = strict
        fig["inversions by accept"] = loose
        fig["driftwatch CPU ms/delivery"] = dw_cpu * 1000 / n
        if pg0 is not None:
            fig["postgres CPU ms/delivery (this db)"] = pg_mine * 1000 / n
            fig["postgres CPU ms/delivery (all)"] = pg_all * 1000 / n
        fig["harness CPU ms/delivery"] = own * 1000 / n
        # Noise: what the rest of the machine was doing meanwhile, in cores (of os.cpu_count()).
        ours = dw_cpu + own + (pg_all if pg0 is not None else 0.0)
        fig["other processes, cores busy"] = max(0.0, busy - ours) / (t_end - t_start)
        # 2xx statuses other than 202 would be odd: say so.
        for status, count in api.statuses.items():
            if status != 202:
                fig[f"HTTP {status}"] = count
        return fig
    finally:
        await session.close()
        await receiver.stop()
        dw.close()


# ---------------------------------------------------------------- output


def fmt(name: str, v: float) -> str:
    if v != v:  # nan
        return "-"
    if name.startswith("inversions") or name.startswith("HTTP"):
        return f"{v:.0f}"
    if name.endswith("/s"):
        return f"{v:,.0f}"
    if name == "delivered/raw":
        return f"{v:.3f}"
    if "CPU" in name or "cores" in name:
        return f"{v:.3f}"
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}"


def describe(args: argparse.Namespace) -> str:
    db = args.database
    if args.rate is not None:
        load = f"open loop {args.rate:g} events/s for {args.seconds:g} s ({int(args.rate * args.seconds)} events)"
    else:
        load = f"{args.events} events as fast as {args.connections} connections go"
    spread = f", round-robin over {args.endpoints} endpoints" if args.endpoints > 1 else ", 1 endpoint"
    return f"{db}: {load}{spread}, {args.connections} connections, {os.path.basename(args.driftwatch)}"


def table_one(title: str, fig: dict[str, float]) -> str:
    lines = [f"**{title}**", "", "| figure | value |", "|---|---|"]
    lines += [f"| {k} | {fmt(k, v)} |" for k, v in fig.items()]
    return "\n".join(lines)


def table_rounds(title: str, figs: list[dict[str, float]]) -> str:
    names: list[str] = []
    for f in figs:
        names += [k for k in f if k not in names]
    head = "| figure | " + " | ".join(f"round {i + 1}" for i in range(len(figs))) + " | median | range |"
    lines = [f"**{title}**", "", head, "|---" * (len(figs) + 3) + "|"]
    for k in names:
        vals = [f.get(k, float("nan")) for f in figs]
        real = [v for v in vals if v == v]
        med = statistics.median(real) if real else float("nan")
        rng = f"{fmt(k, min(real))}-{fmt(k, max(real))}" if real else "-"
        lines.append(f"| {k} | " + " | ".join(fmt(k, v) for v in vals) + f" | {fmt(k, med)} | {rng} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--driftwatch", help="the driftwatch binary to measure")
    p.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/test",
                   help="a PostgreSQL server to create (and drop) a fresh database on, per round")
    p.add_argument("--events", type=int, default=10_000, help="test events posted (one delivery each)")
    p.add_argument("--connections", type=int, default=64, help="client connections (and in-flight requests)")
    p.add_argument("--endpoints", type=int, default=1,
                   help="endpoints; events go round-robin over them (10,000 over 10 = 1,000 each)")
    p.add_argument("--rate", type=float, help="open loop: post this many events a second ...")
    p.add_argument("--seconds", type=float, default=30, help="... for this long (with --rate)")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--timeout", type=float, default=600, help="seconds to wait for the last arrival")
    p.add_argument("--request-timeout", type=float, default=120, help="seconds one API request may take")
    p.add_argument("--rate-limit-per-minute", type=int, default=0,
                   help="DRIFTWATCH_RATE_LIMIT_PER_MINUTE for the server (default 0: the token's rate "
                        "limit off; driftwatch's own default, 600, answers 429 within a second of a burst)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="another setting for driftwatch serve (repeatable), e.g. DRIFTWATCH_POOL_SIZE=32")
    p.add_argument("--logs", metavar="DIR", default=os.path.join(tempfile.gettempdir(), "driftwatch-harness"),
                   help="where driftwatch's output (stderr and stdout) is kept, one file a round")
    p.add_argument("--json", metavar="FILE", help="append each round's figures to FILE as one JSON line")
    p.add_argument("--summarise", metavar="FILE",
                   help="print the rounds table (median, range) of every setup in a --json FILE, and exit: "
                        "for rounds run as separate, interleaved invocations")
    args = p.parse_args(argv)
    if args.summarise:
        return args
    if not args.driftwatch:
        p.error("--driftwatch is required")
    if not os.access(args.driftwatch, os.X_OK):
        p.error(f"{args.driftwatch} is not an executable")
    args.driftwatch = os.path.abspath(args.driftwatch)
    for e in args.env:
        if "=" not in e:
            p.error(f"--env {e}: expected NAME=VALUE")
    return args


def summarise(path: str) -> int:
    runs: dict[str, list[dict[str, float]]] = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                title = d.pop("title")
                for k in ("round", "args"):
                    d.pop(k, None)
                runs.setdefault(title, []).append(d)
    for title, figs in runs.items():
        print(table_rounds(f"{title}: {len(figs)} rounds", figs) + "\n")
    return 0


async def main(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    title = describe(args)
    figs = []
    for r in range(1, args.rounds + 1):
        fig = await one_run(args, r)
        figs.append(fig)
        print(table_one(f"{title}, round {r}", fig) + "\n", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"title": title, "round": r, "args": sys.argv[1:], **fig}) + "\n")
    if len(figs) > 1:
        print(table_rounds(f"{title}: {len(figs)} rounds", figs) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    a = parse_args()
    if a.summarise:
        sys.exit(summarise(a.summarise))
    try:
        sys.exit(asyncio.run(main(a)))
    except HarnessError as e:
        print(f"harness: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("harness: interrupted; cleaned up", file=sys.stderr)
        sys.exit(130)
