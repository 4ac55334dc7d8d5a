"""``nova merge-traces``: the Chrome traces of several ranks
(``torch.nova.write_trace`` in each torchrun process) as one trace with a row
(process) per rank, on their common simulated clock."""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "merge-traces", help="merge per-rank Chrome traces into one, a row per rank",
        description="Each input is a trace written by torch.nova.write_trace in one rank; the "
        "output shows every rank as a process (sorted by rank) with its compute stream and its "
        "collectives ('comm') as threads, on the simulated clock all ranks agree on.")
    p.add_argument("output", help="the merged trace (.json) to write")
    p.add_argument("inputs", nargs="+", help="per-rank traces")
    p.set_defaults(run=run)


def _rank(name: str) -> int:
    found = re.search(r"(\d+)$", name)
    return int(found.group(1)) if found else 0


def merge(inputs: list[Path]) -> dict:
    events: list[dict] = []
    names: set[str] = set()
    for path in inputs:
        try:
            trace = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"nova merge-traces: cannot read {path}: {e}") from None
        for event in trace.get("traceEvents", []):
            if event.get("ph") == "X":
                names.add(str(event["pid"]))
                events.append(event)
    for name in sorted(names, key=_rank):
        events.append({"name": "process_name", "ph": "M", "pid": name, "args": {"name": name}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": name,
                       "args": {"sort_index": _rank(name)}})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def contention(events: list[dict]) -> str | None:
    """The ranks' collectives as the ranks agreed on them while they ran (the
    coordinator's times), against one run of all of them together from the same starts
    in the in-process machine's flow model
    (:func:`nova.sim.collective_time.simulate_collectives`): the error of the live
    coordinator against the in-process simulator."""
    calls: dict[tuple, tuple[dict, float]] = {}
    for e in events:
        a = e.get("args") or {}
        if "kind" in a and a["kind"] != "barrier":
            calls.setdefault((a["group"], a["seq"]), (a, e["dur"] * 1e3))
    if not calls:
        return None
    from nova.sim.collective_time import simulate_collectives

    items = sorted(calls.values(), key=lambda c: c[0]["start_ns"])
    target = items[0][0]["target"]
    elt = max((a["elt"] for a, _ in items), key=lambda x: sum(1 for b, _ in items if b["elt"] == x))
    ends = simulate_collectives(target, [(a["kind"], tuple(a["chips"]), a["nbytes"], a["start_ns"])
                                         for a, _ in items], elt=elt)
    agreed = sum(d for _, d in items)
    together = sum(end - a["start_ns"] for (a, _), end in zip(items, ends))
    worst = max(((abs((end - a["start_ns"]) / d - 1) if d else 0.0, a) for (a, d), end in zip(items, ends)),
                key=lambda pair: pair[0])
    return (f"{len(items)} collectives on {target}: {agreed / 1e3:.3f} us as the ranks agreed, "
            f"{together / 1e3:.3f} us in one run of the in-process flow model from the same starts "
            f"({100 * (together / agreed - 1) if agreed else 0.0:+.3f} %); largest difference of one "
            f"{100 * worst[0]:.3f} % ({worst[1]['kind']} #{worst[1]['seq']} of group {worst[1]['group']})")


def run(args: argparse.Namespace) -> int:
    merged = merge([Path(p) for p in args.inputs])
    Path(args.output).write_text(json.dumps(merged))
    ranks = sum(1 for e in merged["traceEvents"] if e["name"] == "process_name")
    print(f"nova: wrote {args.output} ({ranks} rank{'s' if ranks != 1 else ''}, "
          f"{sum(1 for e in merged['traceEvents'] if e['ph'] == 'X')} slices)")
    summary = contention(merged["traceEvents"])
    if summary:
        print(f"nova: {summary}")
    return 0
