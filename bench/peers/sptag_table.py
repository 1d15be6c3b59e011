#!/usr/bin/python3
"""The table of bench/peers/sptag_spann.sh: SPTAG's SPANN vs Shoal on one SSD regime.

    /usr/bin/python3 bench/peers/sptag_table.py WORK

Reads WORK/logs/sptag-r<round>-irn<N>.log (SSDServing's own report plus the /proc lines the
script appended), WORK/logs/shoal-r<round>-*.log (`shoal_bench ann`, one process per point) and
the two builds' logs, sptag-build.log and shoal-build.log (`/usr/bin/time -v` around each: wall
and CPU seconds; the process that built Shoal's index gives its build time only, as its search
ran on the caches the build's calibration filled). Each point keeps its
fastest round (lowest mean latency; recall does not change between rounds). Prints every point,
then per recall target the fastest point of each system reaching it and SPTAG / Shoal ratios
(above 1: Shoal is lower, i.e. better). 4-KiB reads: SPTAG's own page count per query (its
posting pages read with O_DIRECT) and /proc/PID/io read_bytes / 4096 / queries as the kernel
saw them over the warm-up and timed queries (that one also counts the head index loaded at
start when it is not in the page cache); Shoal's 4-KiB reads from SSD per query (`disk 4K/q`,
posting and vector cache hits read nothing).
Standard library only.
"""
import glob
import os
import re
import sys

TARGETS = (0.90, 0.95)


def numbers_after(lines, title):
    """The values row of SSDServing's PrintPercentiles block titled `title`."""
    for i, line in enumerate(lines):
        if title in line:
            for row in lines[i + 1:i + 4]:
                fields = row.split("]")[-1].split()
                try:
                    return [float(f) for f in fields]
                except ValueError:
                    continue
    return None


def parse_sptag(path):
    lines = open(path, errors="replace").read().splitlines()
    text = "\n".join(lines)
    recall = re.findall(r"Recall\d*@10: ([0-9.]+)", text)
    lat = numbers_after(lines, "Total Latency Distribution")
    pages = numbers_after(lines, "Total Disk Page Access Distribution")
    ios = numbers_after(lines, "Total Disk IO Distribution")
    if not recall or lat is None or pages is None:
        return None
    extra = dict(re.findall(r"^(proc_io_read_bytes|vm_hwm_kib|queries|warmup_queries|loadavg) (.*)$",
                            text, re.M))
    # The process read for its warm-up pass as well as for the timed queries.
    nq = float(extra.get("queries", 1000)) + float(extra.get("warmup_queries", 0))
    io_bytes = extra.get("proc_io_read_bytes", "")
    irn = re.search(r"irn(\d+)", path).group(1)
    return {
        "point": f"InternalResultNum={irn}",
        "recall": float(recall[-1]),
        "mean_ms": lat[0], "p50_ms": lat[1], "p99_ms": lat[4],
        "reads": pages[0], "ios": ios[0] if ios else None,
        "proc_reads": float(io_bytes) / 4096 / nq if io_bytes else None,
        "rss_mib": float(extra.get("vm_hwm_kib", 0)) / 1024,
        "load": extra.get("loadavg", "?"),
    }


def cpu_seconds(text):
    """User + system seconds of the last `/usr/bin/time -v` report in text, or None."""
    user = re.findall(r"User time \(seconds\): ([0-9.]+)", text)
    system = re.findall(r"System time \(seconds\): ([0-9.]+)", text)
    return float(user[-1]) + float(system[-1]) if user and system else None


def parse_shoal(path):
    points, build, ram_note = [], None, ""
    text = open(path, errors="replace").read()
    if "reused its index" not in text:  # the build's process: its caches are the build's
        m = re.search(r"== shoal \((.*?)\): build ([0-9.]+) s", text)
        return [], (float(m.group(2)) if m else None), (m.group(1) if m else "")
    m = re.search(r"== shoal \((.*?)\): build ([0-9.]+) s(?:, load ([0-9.]+) s)?", text)
    if m:
        ram_note = m.group(1)
        build = float(m.group(2))
    reused = "reused its index" in text
    load = re.search(r"^loadavg (.*)$", text, re.M)
    cols = None
    for line in text.splitlines():
        if line.strip().startswith("params "):  # `ann`'s header: columns by name
            cols = []
            for tok in line.split():  # "p50 us", "RAM MiB" and "disk 4K/q" are one column each
                if tok in ("us", "MiB") or (cols and cols[-1] == "disk"):
                    cols[-1] += " " + tok
                else:
                    cols.append(tok)
            continue
        f = line.split()
        if cols is None or len(f) != len(cols) or "=" not in f[0]:
            continue
        try:
            v = dict(zip(cols[1:], map(float, f[1:])))
        except ValueError:
            continue
        reads = v.get("disk 4K/q", v["bytes/query"] / 4096)
        points.append({
            "point": f[0], "recall": v["recall"], "mean_ms": 1000.0 / v["QPS"],
            "p50_ms": v["p50 us"] / 1000, "p99_ms": v["p99 us"] / 1000, "reads": reads,
            "ios": v["posts/q"] - v["cache/q"], "proc_reads": None, "rss_mib": v["RAM MiB"],
            "posts": v["posts/q"], "cache": v["cache/q"],
            "load": load.group(1) if load else "?",
        })
    return points, (None if reused else build), ram_note


def best_per_point(runs):
    best = {}
    for p in runs:
        cur = best.get(p["point"])
        if cur is None or p["mean_ms"] < cur["mean_ms"]:
            best[p["point"]] = p
    return sorted(best.values(), key=lambda p: p["recall"])


def fastest_at(points, target):
    ok = [p for p in points if p["recall"] >= target]
    return min(ok, key=lambda p: p["mean_ms"]) if ok else None


def fmt(v, spec="%.2f"):
    return "n/a" if v is None else spec % v


def main(work):
    logs = os.path.join(work, "logs")
    sptag = [p for p in map(parse_sptag, sorted(glob.glob(f"{logs}/sptag-r*-irn*.log"))) if p]
    shoal, shoal_build, shoal_params = [], None, ""
    for path in sorted(glob.glob(f"{logs}/shoal-r*.log")) + glob.glob(f"{logs}/shoal-build.log"):
        pts, build, params = parse_shoal(path)
        shoal += pts
        shoal_build = shoal_build or build
        shoal_params = shoal_params or params
    shoal_cpu = None
    if os.path.exists(os.path.join(logs, "shoal-build.log")):
        shoal_cpu = cpu_seconds(open(os.path.join(logs, "shoal-build.log"), errors="replace").read())
    sptag_build, sptag_cpu, sptag_stages = None, None, "SelectHead + BuildHead + BuildSSDIndex"
    build_log = os.path.join(logs, "sptag-build.log")
    if os.path.exists(build_log):
        text = open(build_log, errors="replace").read()
        sptag_cpu = cpu_seconds(text)
        m = re.findall(r"wall_seconds ([0-9.]+)", text)
        sptag_build = float(m[-1]) if m else None
        # /usr/bin/time -v's wall clock ("h:mm:ss" or "m:ss.ss") when the script's line is absent
        w = re.findall(r"Elapsed \(wall clock\) time .*?: ([0-9:.]+)", text)
        finished = "build ssd time" in text and "terminated by signal" not in text
        if sptag_build is None and w and finished:
            sptag_build = 0.0
            for part in w[-1].split(":"):
                sptag_build = sptag_build * 60 + float(part)
        stages = re.findall(r"select head time: ([0-9.]+)s build head time: ([0-9.]+)s "
                            r"build ssd time: ([0-9.]+)s", text)
        if stages:
            sptag_stages = "SelectHead %s s, BuildHead %s s, BuildSSDIndex %s s" % stages[-1]
    systems = {"sptag-spann": best_per_point(sptag), "shoal": best_per_point(shoal)}

    print("| system | point | recall@10 | mean ms | p50 ms | p99 ms | 4-KiB reads/q | "
          "/proc reads/q | RSS/RAM MiB | load |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, pts in systems.items():
        for p in pts:
            print(f"| {name} | {p['point']} | {p['recall']:.4f} | {p['mean_ms']:.3f} | "
                  f"{p['p50_ms']:.3f} | {p['p99_ms']:.3f} | {p['reads']:.1f} | "
                  f"{fmt(p['proc_reads'], '%.1f')} | {p['rss_mib']:.1f} | {p['load']} |")
    print()
    print(f"build: sptag-spann {fmt(sptag_build, '%.0f')} s wall, {fmt(sptag_cpu, '%.0f')} CPU-s "
          f"({sptag_stages}); shoal {fmt(shoal_build, '%.0f')} s wall (BuildIndex; {shoal_params}), "
          f"{fmt(shoal_cpu, '%.0f')} CPU-s (the whole bench process)")
    print()
    print("| recall@10 >= | system | point | recall | mean ms | p99 ms | 4-KiB reads/q |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for t in TARGETS:
        a, b = fastest_at(systems["sptag-spann"], t), fastest_at(systems["shoal"], t)
        for name, p in (("sptag-spann", a), ("shoal", b)):
            if p is None:
                why = "(not reached)" if systems[name] else "(no measurements)"
                print(f"| {t:.2f} | {name} | {why} | | | | |")
            else:
                print(f"| {t:.2f} | {name} | {p['point']} | {p['recall']:.4f} | "
                      f"{p['mean_ms']:.3f} | {p['p99_ms']:.3f} | {p['reads']:.1f} |")
        if a and b:
            r = lambda x, y: f"**{x / y:.2f}x**" if y > 0 else "inf"
            print(f"| {t:.2f} | **sptag / shoal** | | | {r(a['mean_ms'], b['mean_ms'])} | "
                  f"{r(a['p99_ms'], b['p99_ms'])} | {r(a['reads'], b['reads'])} |")
    if sptag_build and shoal_build:
        print(f"\nbuild time sptag / shoal: {sptag_build / shoal_build:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: sptag_table.py WORK")
    main(sys.argv[1])
