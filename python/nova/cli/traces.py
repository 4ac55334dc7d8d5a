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


def run(args: argparse.Namespace) -> int:
    merged = merge([Path(p) for p in args.inputs])
    Path(args.output).write_text(json.dumps(merged))
    ranks = sum(1 for e in merged["traceEvents"] if e["name"] == "process_name")
    print(f"nova: wrote {args.output} ({ranks} rank{'s' if ranks != 1 else ''}, "
          f"{sum(1 for e in merged['traceEvents'] if e['ph'] == 'X')} slices)")
    return 0
