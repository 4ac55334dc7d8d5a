"""``nova calibrate TABLE.csv --target T -o OUT.json``: fit a target to measured times."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nova.binary.targets import target_dirs, target_file
from nova.sim.errors import SimulationError, TargetError

# nova.sim.calibrate is imported when the command runs: registering the command
# must not slow down (or break) every other nova command.

HELP = """\
TABLE is a CSV file of measured operations, one per row (docs/validation.md,
"Calibration table"); lines starting with # are comments:

  kind,shape,dtype,measured_ns,chips,algorithm,note
  matmul,512x128x128,bf16,480.0,,,
  dma.hbm-sram,256x256,bf16,260.5,,,
  all_reduce,262144,f32,9100,8,,

Every row is simulated on the target (timing only); the target's timing constants
are fitted by least squares on ln(simulated / measured). Prints every row's
residual and the geomean error before and after, then writes the fitted target.
"""

def find_target(name: str) -> Path:
    """A target file: ``name`` if it is a file, else where :mod:`nova.binary.targets`
    finds target ``name``."""
    path = Path(name) if Path(name).is_file() else target_file(name)
    if path is None:
        raise SimulationError(f"cannot find target '{name}' (a .json path, or a name in "
                              f"{', '.join(str(d) for d in target_dirs())})")
    return path


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [n.strip() for n in text.split(",") if n.strip()]


def report(result) -> str:
    """The residual table, the constants and the geomean errors of a
    :class:`nova.sim.calibrate.Fit`, as printed."""
    lines = [f"{'line':>5} {'row':44s} {'measured ns':>13} {'before ns':>13} {'resid':>8} "
             f"{'after ns':>13} {'resid':>8}"]
    for r in result.rows:
        lines.append(f"{r.row.line:5d} {r.row.bench.label[:44]:44s} {r.row.measured_ns:13.6g} "
                     f"{r.before_ns:13.6g} {100 * r.residual_before:+7.2f}% {r.after_ns:13.6g} "
                     f"{100 * r.residual_after:+7.2f}%")
    lines.append("")
    lines.append(f"{'constant':40s} {'before':>12} {'after':>12}  status")
    for p in result.parameters:
        change = ""
        if p.status == "fitted" and p.before:
            change = f"{100 * (p.after / p.before - 1):+.2f}%"
            if p.stderr == p.stderr:  # not nan
                change += f"  (+- {p.stderr:.3g})"
        why = change or (f"({p.why})" if p.why else "")
        lines.append(f"{p.name:40s} {p.before:12.6g} {p.after:12.6g}  {p.status} {why}".rstrip())
    lines.append("")
    lines.append(f"geomean error: {100 * result.geomean_error_before:.2f} % before, "
                 f"{100 * result.geomean_error_after:.2f} % after "
                 f"({result.iterations} iterations{'' if result.converged else ', not converged'})")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The command: exit 0 on success, 2 with one error line for a bad table or target."""
    from nova.sim.calibrate import calibrated_description, fit, read_table
    from nova.sim.target import load_target

    try:
        rows = read_table(args.table)
        start = load_target(find_target(args.target))
        result = fit(start, rows, only=_names(args.only), hold=_names(args.hold) or ())
        print(report(result))
        if args.output:
            out = result.target.with_changes(
                name=args.name or (start.name + "-cal")[:31],
                description=calibrated_description(start, args.table, result))
            d = out.as_dict()
            Path(args.output).write_text(json.dumps(d, indent=2) + "\n")
            load_target(args.output)  # what was written reads back through the schema
            print(f"wrote {args.output}")
    except (SimulationError, TargetError, OSError) as error:
        print(f"nova: error: {error}", file=sys.stderr)
        return 2
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Registers ``nova calibrate``."""
    p = commands.add_parser(
        "calibrate", help="fit a target's timing constants to a table of measured times",
        description="Fits the target's timing constants to measured operation times.",
        epilog=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("table", help="CSV of measured rows (see below)")
    p.add_argument("--target", default="nova-t1", help="starting target: name or .json path")
    p.add_argument("-o", "--output", help="write the calibrated target here (.json)")
    p.add_argument("--name", help="name of the written target (default: the starting one's + '-cal')")
    p.add_argument("--only", metavar="KEYS",
                   help="comma-separated constants to fit, e.g. hbm_gbps,timing.dma_setup_cycles "
                        "(default: every one the table constrains; the output lists them all)")
    p.add_argument("--hold", metavar="KEYS", help="comma-separated constants never to move")
    p.set_defaults(run=run)
