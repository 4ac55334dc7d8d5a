"""``nova``: an argparse shell over the library; every command calls one library function."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from nova import examples
from nova.compiler.driver import run_opt, run_opt_file
from nova.compiler.errors import NovaCompileError, NovaError
from nova.compiler.options import TargetOptions
from nova.demo import DEFAULT_EXAMPLE, run_demo


def _demo(args: argparse.Namespace) -> int:
    result = run_demo(args.example, TargetOptions(name=args.target, chips=args.chips))
    sys.stdout.write(result.output)
    print(
        f"// nova demo: {result.example.name} verified and round-tripped through "
        f"nova-opt with target {result.target.name}",
        file=sys.stderr,
    )
    return 0


def _opt(args: argparse.Namespace) -> int:
    if args.file == "-":
        output = run_opt(sys.stdin.read(), args.passes)
    else:
        output = run_opt_file(args.file, args.passes)
    sys.stdout.write(output)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nova", description="Nova accelerator compiler")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo", help="compile a sample tiled matmul + bias + GELU kernel with nova-opt"
    )
    demo.add_argument("--example", default=DEFAULT_EXAMPLE, choices=examples.available())
    demo.add_argument("--target", default="nova-t1", help="target name or .json path")
    demo.add_argument("--chips", type=int, default=0, help="chips in the system (0: target's)")
    demo.set_defaults(run=_demo)

    opt = commands.add_parser(
        "opt", help="run nova-opt on a file with the given pass flags",
        description="Passes every flag after FILE to nova-opt, "
        "e.g. nova opt kernel.mlir --nova-attach-target=target=nova-t1",
    )
    opt.add_argument("file", help="MLIR file, or - for stdin")
    opt.add_argument("passes", nargs=argparse.REMAINDER, help="nova-opt flags")
    opt.set_defaults(run=_opt)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except NovaCompileError as error:
        # The tool's own diagnostics are what the user needs; print them as they came.
        sys.stderr.write(error.stderr if error.stderr.endswith("\n") else error.stderr + "\n")
        print(f"nova: error: {error.command[0]} failed with exit status {error.returncode}",
              file=sys.stderr)
        return 1
    except (NovaError, ValueError) as error:
        print(f"nova: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
