"""Summarises the driver records of scripts/drive-latency.sh: per blob count and method, the
median (p10-p90) latency the driver saw directly, through the proxy and through the bridge,
and what the proxy and the bridge added at the median."""
import json
import sqlite3
import statistics
import sys

db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT method, labels, total_us FROM calls WHERE status = 200").fetchall()
times = {}
for method, labels, total_us in rows:
    labels = json.loads(labels)
    times.setdefault((int(labels["blobs"]), method, labels["way"]), []).append(total_us / 1000)


def cell(values):
    if not values:
        return "-"
    values = sorted(values)
    q = statistics.quantiles(values, n=10) if len(values) > 1 else [values[0]] * 9
    return f"{statistics.median(values):.2f} ({q[0]:.2f}-{q[8]:.2f})"


print("| blobs | call | n | direct ms | proxy ms | bridge ms | proxy adds | bridge adds |")
print("|---:|---|---:|---:|---:|---:|---:|---:|")
for blobs in sorted({k[0] for k in times}):
    for method in sorted({k[1] for k in times if k[0] == blobs}):
        ways = {w: times.get((blobs, method, w), []) for w in ("direct", "proxy", "bridge")}
        med = {w: statistics.median(v) if v else None for w, v in ways.items()}
        add = lambda w: f"{med[w] - med['direct']:+.2f}" if med[w] is not None and med["direct"] is not None else "-"
        print(f"| {blobs} | {method} | {len(ways['direct'])} | {cell(ways['direct'])} | "
              f"{cell(ways['proxy'])} | {cell(ways['bridge'])} | {add('proxy')} | {add('bridge')} |")
