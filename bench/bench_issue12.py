#!/usr/bin/env python3
"""Every measure of issue 12 side by side, from one run: offline commands, translation core, daemon
(cold start, restart, event, /explain) and memory, each against its target.

It runs bench_offline.py and bench_daemon.py (each size in a process of its own) and puts their
figures in one table. The default run is short (a few minutes on two cores): the offline commands on
the 5,000-namespace and kubectl-style dumps, the translation core on the 5,000-namespace shape, the
daemon at 150 and 1,500 NetworkPolicies. `--full` adds the XLarge translation core and the daemon
at 15,000 NetworkPolicies; `--daemon-sizes` picks the daemon sizes (XLarge is 75000:100000, a run
of an hour or more: its memory target is about that size).

    python bench/bench_issue12.py               # short
    python bench/bench_issue12.py --full        # adds XLarge core and 15,000 NetworkPolicies

Figures depend on the machine's load (printed with them): compare CPU figures and ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))

RATIO, CORE_US, EVENT_P99_MS, COLD_VS_BARE, RESTART_SHARE, EXPLAIN_P99_MS, XLARGE_RSS_MB = (
    3.0, 41.0, 50.0, 1.25, 0.1, 50.0, 1400.0)
XLARGE_POLICIES = 75_000


def run_json(argv: List[str]) -> Any:
    """A benchmark's JSON (its standard output); its table and progress go to our stderr."""
    done = subprocess.run([sys.executable] + argv, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout)


def verdict(ok: Optional[bool]) -> str:
    return "-" if ok is None else ("met" if ok else "NOT met")


Row = Tuple[str, str, str, Optional[bool]]  # measure, figure, target, met


def offline_rows(figures: Dict[str, Any]) -> List[Row]:
    rows: List[Row] = []
    for name, key, base in (("translate -o json, 5,000-namespace dump", "translate_json", "parse_antrea"),
                            ("explain CLI, kubectl-style dump", "explain", "parse_kubectl")):
        m, b = figures[key], figures[base]
        ratio = m["wall"] / b["wall"]
        rows.append((name, f"{m['wall']:.2f} s vs json.load {b['wall']:.2f} s: {ratio:.1f}x "
                           f"(CPU {m['cpu'] / b['cpu']:.1f}x), peak {m['mib']:.0f} MiB",
                     f"within {RATIO:g}x", ratio <= RATIO))
    for shape, label in (("core_antrea", "5,000-namespace shape"), ("core_xlarge", "XLarge shape")):
        if shape in figures:
            r = figures[shape]
            per = 1e6 / r["policies"]
            rows.append((f"translation core per NetworkPolicy, {label}",
                         f"{r['wall'] * per:.1f} us wall, {r['cpu'] * per:.1f} us CPU "
                         f"({r['policies']:,} policies, peak {r['mib']:.0f} MiB)",
                         f"{CORE_US:g} us or less", r["wall"] * per <= CORE_US))
    return rows


def daemon_rows(results: List[Dict[str, Any]]) -> List[Row]:
    rows: List[Row] = []

    def each(name: str, figure: Callable[[Dict[str, Any]], str], target: str,
             ok: Callable[[Dict[str, Any]], Optional[bool]]) -> None:
        for r in results:
            rows.append((f"{name}, {r['policies']:,} NetworkPolicies", figure(r), target, ok(r)))

    def restart_share(r: Dict[str, Any]) -> float:
        cold = r["cold_start"]
        return r["restart"]["wall_s"] / (cold["translate_s"] + min(cold["walls_s"]))

    each("event -> last write p50 / p99", lambda r: f"{r['event']['p50_ms']} / {r['event']['p99_ms']} ms",
         f"p99 under {EVENT_P99_MS:g} ms", lambda r: r["event"]["p99_ms"] < EVENT_P99_MS)
    each("cold start, daemon / bare client", lambda r: (
        f"{min(r['cold_start']['walls_s'])} s / {r['bare_client']['wall_s']} s = {r['cold_start']['vs_bare_client']}x"
        if "bare_client" in r else f"{min(r['cold_start']['walls_s'])} s (no bare client run)"),
        f"within {COLD_VS_BARE:g}x",
        lambda r: r["cold_start"]["vs_bare_client"] <= COLD_VS_BARE if "bare_client" in r else None)
    each("restart with nothing changed", lambda r: (
        f"{r['restart']['writes']} writes, {r['restart']['wall_s']} s = {restart_share(r):.2f} of the cold start"),
        f"0 writes, within {RESTART_SHARE:g}",
        lambda r: r["restart"]["writes"] == 0 and restart_share(r) <= RESTART_SHARE)
    each("/explain over HTTP p50 / p99", lambda r: (
        f"{r['explain']['p50_ms']} / {r['explain']['p99_ms']} ms (first after a change {r['explain']['first_ms']} ms)"),
        f"p99 under {EXPLAIN_P99_MS:g} ms", lambda r: r["explain"]["p99_ms"] < EXPLAIN_P99_MS)
    each("daemon RSS after the cold start", lambda r: (
        f"{r['memory_mb']['rss']:.0f} MB (translated {r['memory_mb']['translated']:.0f}, of which synthetic "
        f"manifests {r['memory_mb']['manifests']:.0f}); reconciler "
        f"{(r['memory_mb']['rss'] - r['memory_mb']['translated']) * 1e6 / r['cold_start']['objects']:.0f} B/object"),
        f"under {XLARGE_RSS_MB:g} MB at XLarge",
        lambda r: r["memory_mb"]["rss"] < XLARGE_RSS_MB if r["policies"] >= XLARGE_POLICIES else None)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="add the XLarge core and 15,000 NetworkPolicies")
    parser.add_argument("--daemon-sizes", help="NETWORKPOLICIES:PODS list for bench_daemon (default 150:600,"
                                               "1500:6000; with --full also 15000:20000)")
    parser.add_argument("--events", type=int, default=20, help="NetworkPolicy events timed per daemon size")
    args = parser.parse_args()
    sizes = args.daemon_sizes or ("150:600,1500:6000" + (",15000:20000" if args.full else ""))
    load_before = os.getloadavg()[0]
    offline = run_json([os.path.join(HERE, "bench_offline.py"), "--json"] + ([] if args.full else ["--no-xlarge"]))
    daemon = run_json([os.path.join(HERE, "bench_daemon.py"), "--json", "--sizes", sizes,
                       "--events", str(args.events)])
    rows = offline_rows(offline) + daemon_rows(daemon)
    widths = [max(len(str(row[i])) for row in rows) for i in range(3)]
    print(f"\nissue 12, one run; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, "
          f"{os.cpu_count()} cores")
    for measure, figure, target, ok in rows:
        print(f"{measure:<{widths[0]}}  {figure:<{widths[1]}}  {target:<{widths[2]}}  {verdict(ok)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
