"""The sweep's summary: per dtype, samples per class and the pass rate of the
samples torch-mlir lowers; the causes of the rest; and ``docs/coverage.md``'s
generated part (between ``BEGIN`` and ``END`` below; the prose around it stays)."""

from __future__ import annotations

import collections
import re
from pathlib import Path

from .ops import DTYPES
from .run import CLASSES

BEGIN = "<!-- BEGIN opinfo_coverage.py output: do not edit by hand -->"
END = "<!-- END opinfo_coverage.py output -->"
FAILING = ("wrong", "compile", "sim")


def pattern(message: str) -> str:
    """A message with its specifics (numbers, types, names) blanked, to group causes."""
    text = message.removeprefix("cannot compile the model: ")
    text = re.sub(r": %[\w#:]+ = .*$", "", text)  # the op's printed form
    text = re.sub(r" \(\w+\.py:\d+\)$", "", text)  # where a Python error was raised
    # Payload ops name the cause's family: 'math.atan2' and 'math.acos' group.
    text = re.sub(r"'(math|arith|complex)\.[\w.]+'", r"'\1.*'", text)
    text = re.sub(r"(tensor|memref|vector)<(?:[^<>]|<[^<>]*>)*>", "<type>", text)
    text = re.sub(r"%[\w#]+", "%v", text)
    text = re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", text)
    text = re.sub(r"'[^']*'", lambda m: m.group(0) if len(m.group(0)) < 40 else "'…'", text)
    return text[:160]


def counts(results: dict) -> dict[str, collections.Counter]:
    """Samples per class, per dtype (in ``DTYPES`` order)."""
    out = {}
    for dtype_name in DTYPES:
        table = results.get(dtype_name)
        if table is None:
            continue
        c = collections.Counter()
        for rows in table.values():
            for row in rows:
                c[row["class"]] += 1
        out[dtype_name] = c
    return out


def pass_rate(c: collections.Counter) -> float | None:
    lowerable = sum(c[k] for k in ("pass", *FAILING))
    return 100.0 * c["pass"] / lowerable if lowerable else None


def causes(results: dict, classes=("compile", "sim")) -> list[tuple[str, str, int, list[str]]]:
    """(class, cause, samples, ops) of the samples in ``classes``, most samples first;
    an op of another dtype than float32 is shown as ``op[dtype]``."""
    samples = collections.Counter()
    ops = collections.defaultdict(set)
    for dtype_name, table in results.items():
        for name, rows in table.items():
            for row in rows:
                if row["class"] in classes:
                    key = (row["class"], pattern(row["error"]))
                    samples[key] += 1
                    ops[key].add(name if dtype_name == "float32" else f"{name}[{dtype_name}]")
    return [(k[0], k[1], n, sorted(ops[k])) for k, n in samples.most_common()]


def wrong_rows(results: dict) -> list[tuple[str, str, dict]]:
    return [(dtype_name, name, row) for dtype_name, table in results.items()
            for name, rows in sorted(table.items()) for row in rows if row["class"] == "wrong"]


def _shown(ops: list[str], most: int = 8) -> str:
    return ", ".join(ops[:most]) + (f", +{len(ops) - most}" if len(ops) > most else "")


def count_table(results: dict) -> list[str]:
    head = ["dtype", "OpInfos", *CLASSES, "skip", "pass % of lowerable"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" + "---:|" * (len(head) - 1)]
    for dtype_name, c in counts(results).items():
        rate = pass_rate(c)
        lines.append("| " + " | ".join([dtype_name, str(len(results[dtype_name])),
                                        *(str(c[k]) for k in (*CLASSES, "skip")),
                                        f"{rate:.1f}" if rate is not None else "-"]) + " |")
    return lines


def summarize(results: dict, out=None) -> None:
    """The table and the causes, printed."""
    def say(text=""):
        print(text, file=out)

    say()
    say("\n".join(count_table(results)))
    for kind, top in (("compile", 25), ("sim", 10), ("notlowerable", 12)):
        ranked = causes(results, (kind,))
        say(f"\nTop {kind} causes (samples, ops):")
        for _, cause, n, ops in ranked[:top]:
            say(f"  {n:>4}  {cause}\n        [{_shown(ops)}]")
    wrong = wrong_rows(results)
    say(f"\nwrong ({len(wrong)} samples):")
    for dtype_name, name, row in wrong:
        say(f"  {name} [{dtype_name}] #{row['sample']} {row.get('inputs')}: {row['error']}")


def _cell(text: str | None, limit: int = 110) -> str:
    text = (text or "").replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def generated(results: dict, meta: dict) -> str:
    """The generated part of docs/coverage.md."""
    lines = [BEGIN, ""]
    commands = meta.get("shard_commands") or [meta.get("command", "")]
    lines += [f"Measured {meta.get('date')} with torch {meta.get('torch')} at commit "
              f"`{meta.get('commit')}`, {meta.get('samples_per_op')} samples per OpInfo and "
              f"dtype, timeout {meta.get('timeout_s')} s per sample; the samples of the "
              f"busiest shard took {meta.get('elapsed_s', 0) / 60:.0f} min. Made by:", "", "```"]
    lines += [c for c in commands if c] + ([meta["merge_command"]] if meta.get("merge_command")
                                           else [])
    lines += ["```", "", "Samples per class and dtype:", ""] + count_table(results)
    lines += ["", "Causes of the lowerable samples that do not pass (samples, OpInfos; "
              "`op[dtype]` for dtypes other than float32):", "",
              "| class | cause | samples | OpInfos |", "|---|---|---:|---|"]
    for kind, cause, n, ops in causes(results)[:40]:
        lines.append(f"| {kind} | {_cell(cause, 160)} | {n} | {_cell(_shown(ops, 10), 400)} |")
    wrong = wrong_rows(results)
    lines += ["", f"Wrong numbers ({len(wrong)} samples):", ""]
    lines += [f"- `{name}` {dtype_name} #{row['sample']} {row.get('inputs')}: {row['error']}"
              for dtype_name, name, row in wrong] or ["- none"]
    lines += ["", "Top causes of the samples torch-mlir's default lowering refuses "
              "(not counted against Nova):", "", "| cause | samples | OpInfos |", "|---|---:|---|"]
    for _, cause, n, ops in causes(results, ("notlowerable",))[:15]:
        lines.append(f"| {_cell(cause, 160)} | {n} | {_cell(_shown(ops, 10), 400)} |")
    lines += ["", "### Per OpInfo", "",
              "Samples per class; the first error is the first sample's that did not pass.",
              "", "| OpInfo | dtype | pass | wrong | compile | sim | not lowerable | skip | "
              "first error |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    names = sorted({name for table in results.values() for name in table})
    for name in names:
        for dtype_name in DTYPES:
            rows = results.get(dtype_name, {}).get(name)
            if rows is None:
                continue
            c = collections.Counter(r["class"] for r in rows)
            first = next((r for r in rows if r["class"] != "pass"), None)
            error = (f"{first['class']}: {first.get('error', '')}" if first else "")
            lines.append(f"| {name} | {dtype_name} | "
                         + " | ".join(str(c[k]) if c[k] else "" for k in (*CLASSES, "skip"))
                         + f" | {_cell(error)} |")
    lines += ["", END]
    return "\n".join(lines)


def write_doc(path: Path, results: dict, meta: dict) -> None:
    """Replaces the generated part of ``path`` (appends it when there is none)."""
    text = path.read_text() if path.exists() else "# Op coverage\n\n"
    part = generated(results, meta)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + part + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + part + "\n"
    path.write_text(text)
