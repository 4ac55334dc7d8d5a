"""``nova``: an argparse shell over the library; every command calls one library function."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from nova import examples
from nova.compiler.driver import run_opt, run_opt_file
from nova.compiler.errors import NovaCompileError, NovaError
from nova.compiler.options import TargetOptions
from nova.demo import (TRAIN_DEMO_RTOL, TRAIN_DEMO_STEPS, run_demo, run_model_demo,
                       run_parallel_demo, run_train_demo)
from nova.runtime.errors import NovaRuntimeError

COMPILE_HELP = """\
MODEL is a Python file that nova runs and that defines either
  model           a torch.nn.Module, and
  example_inputs  a tuple of torch tensors (or one tensor) to export it at,
or
  get_model()     a function returning (model, example_inputs).
The parameters' current values are bound into the program, which then takes the
model's inputs only. Example model.py:

  import torch
  from nova import models
  model = models.MLP(64, 256)
  example_inputs = (torch.randn(8, 64),)
"""


def _demo(args: argparse.Namespace) -> int:
    target = TargetOptions(name=args.target, chips=args.chips)
    if args.example is not None:
        result = run_demo(args.example, target)
        sys.stdout.write(result.output)
        print(
            f"// nova demo: {result.example.name} verified and round-tripped through "
            f"nova-opt with target {result.target.name}",
            file=sys.stderr,
        )
        return 0
    cfg_text = ("2-layer GPT language model (d_model 128, 4 heads, seq 64, vocab 256, "
                "random weights; token ids in, logits out)")
    if args.parallel:
        return _parallel_demo(cfg_text, args.target)
    if args.train:
        return _train_demo(cfg_text, target, args)
    _progress(f"compiling a {cfg_text} for {target.name} ...")
    result = run_model_demo(target, trace=args.trace)
    print(result.summary)
    verdict = "match" if result.matches_torch else "DO NOT match"
    print(f"outputs {verdict} torch eager (max abs error {result.max_abs_error:.2e}, rtol 1e-4)")
    if result.trace is not None:
        print(f"timeline: {result.trace} (open in https://ui.perfetto.dev)")
    return 0 if result.matches_torch else 1


def _train_demo(cfg_text: str, target: TargetOptions, args: argparse.Namespace) -> int:
    _progress(f"compiling a training step (forward, backward, AdamW) of a {cfg_text} ...")
    print(f"{'step':>4s} {'nova loss':>12s} {'torch loss':>12s} {'step time':>12s} {'MFU':>7s}")

    def show(row) -> None:
        print(f"{row.index:4d} {row.loss:12.6f} {row.torch_loss:12.6f} "
              f"{row.time_us:9.1f} us {100 * row.mfu:6.2f}%", flush=True)

    trained = run_train_demo(target, steps=args.steps, plot=args.plot, on_step=show)
    print(trained.stats.summary())
    verdict = "every step matches" if trained.matches_torch else "losses DO NOT match"
    print(f"{verdict} torch eager (rtol {TRAIN_DEMO_RTOL:g}; largest relative difference "
          f"{trained.max_rel_diff:.2e})")
    if trained.plot is not None:
        print(f"loss curve: {trained.plot}")
    return 0 if trained.matches_torch else 1


def _parallel_demo(cfg_text: str, target: str) -> int:
    _progress(f"compiling a {cfg_text}, batch 4, on 1 chip and on {target} meshes ...")
    rows = run_parallel_demo(target)
    print(f"{'layout':<14}{'chips':>6}{'simulated':>14}{'speedup':>9}{'all-reduces':>13}"
          f"{'max abs err':>13}")
    base = rows[0].time_us
    for row in rows:
        print(f"{row.layout:<14}{row.chips:>6}{row.time_us:>11.2f} us{base / row.time_us:>8.2f}x"
              f"{row.all_reduces:>13}{row.max_abs_error:>13.1e}")
    ok = all(row.matches_torch for row in rows)
    print("every layout matches torch eager (rtol 1e-4)" if ok
          else "some layouts DO NOT match torch eager")
    return 0 if ok else 1


def _opt(args: argparse.Namespace) -> int:
    if args.file == "-":
        output = run_opt(sys.stdin.read(), args.passes)
    else:
        output = run_opt_file(args.file, args.passes)
    sys.stdout.write(output)
    return 0


def _positive(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _progress(message: str) -> None:
    print(f"nova: {message}", file=sys.stderr, flush=True)


def _compile(args: argparse.Namespace) -> int:
    # Heavy imports (torch, torch-mlir) only for the command that needs them.
    from nova.cli.stages import compile_stages
    from nova.cli.model_file import load_model_file

    output = Path(args.output) if args.output else Path(args.model).with_suffix(".novaprog")
    _progress(f"loading {args.model}")
    model, example_inputs = load_model_file(args.model)
    chips = f"{args.chips} chip(s)" if args.chips else "the target's chips"
    _progress(f"compiling for {args.target}, {chips}")
    start = time.perf_counter()
    program = None
    for stage, result in compile_stages(model, *example_inputs, target=args.target,
                                        chips=args.chips, dump_dir=args.dump_dir):
        now = time.perf_counter()
        _progress(f"  {stage:9s} done in {now - start:.2f} s")
        start, program = now, result
    assert program is not None
    program.save(output)
    code = sum(len(p) for p in program.binary.programs)
    _progress(f"wrote {output} ({output.stat().st_size} bytes, {code} instructions, "
              f"target {program.binary.header.target_name})")
    if args.dump_dir:
        _progress(f"stage IR in {args.dump_dir}")
    return 0


def _program_inputs(args: argparse.Namespace, program) -> list[np.ndarray]:
    from nova.cli.inputs import load_inputs, random_inputs

    if args.inputs:
        return load_inputs(args.inputs, program.input_entries)
    return random_inputs(program.input_entries, seed=args.seed)


def _stats(name: str, value: np.ndarray) -> str:
    line = f"{name}: {value.dtype.name}{list(value.shape)}"
    if value.size and np.issubdtype(value.dtype, np.number):
        data = value.astype(np.float64)
        line += (f"  min {data.min():.6g}  max {data.max():.6g}  mean {data.mean():.6g}"
                 f"  std {data.std():.6g}")
        if not np.isfinite(data).all():
            line += f"  ({int((~np.isfinite(data)).sum())} non-finite)"
    return line


def _output_names(program) -> list[str]:
    names = [e.name for e in program.output_entries]
    if len(set(names)) != len(names) or not all(names):
        names = [f"output{i}" for i in range(len(names))]
    return names


def _run(args: argparse.Namespace) -> int:
    from nova.cli.program_file import load_program

    program = load_program(args.program)
    inputs = _program_inputs(args, program)
    outputs = [o.numpy() for o in program.run(*inputs)]
    names = _output_names(program)
    for name, value in zip(names, outputs):
        print(_stats(name, value))
    print(f"simulated time: {program.report.time_s * 1e6:.3f} us")
    if args.output:
        np.savez(args.output, **dict(zip(names, outputs)))
        _progress(f"wrote outputs to {args.output}")
    return 0


def _profile(args: argparse.Namespace) -> int:
    from nova.cli.program_file import load_program

    program = load_program(args.program)
    if args.timing_only:
        from nova.runtime.program import CompiledProgram

        if not isinstance(program, CompiledProgram):
            raise NovaRuntimeError(f"{args.program}: --timing-only runs single-program .novaprog "
                                   "files (a multi-chip program: use nova.sim.Simulator(binary, "
                                   "functional=False))")
        program.run(trace=True, timing_only=True)
    else:
        program.run(*_program_inputs(args, program), trace=True)
    print(program.report.summary())
    print()
    print(program.report.profile(by=args.by, top=args.top or None))
    print()
    print(program.critical_path(by="module" if args.by == "module" else "engine"))
    trace = Path(args.trace) if args.trace else Path(args.program).with_suffix(".trace.json")
    program.write_trace(trace)
    _progress(f"wrote Chrome trace to {trace} (open in https://ui.perfetto.dev)")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from nova.cli.describe import describe
    from nova.cli.program_file import load_program

    sys.stdout.write(describe(load_program(args.program), code=not args.no_code))
    return 0


def _targets(args: argparse.Namespace) -> int:
    from nova.cli.targets import targets_table

    sys.stdout.write(targets_table())
    return 0


class _Versions(argparse.Action):
    """``--version``: Nova, torch, torch-mlir and MLIR versions, then exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the versions of Nova, torch, torch-mlir and MLIR and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from nova.cli.versions import version_text

        sys.stdout.write(version_text())
        parser.exit()


def _add_input_flags(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--inputs", metavar="NPZ",
                        help="inputs as a .npz: keyed by input name, or arr_0, arr_1... in order")
    source.add_argument("--random", action="store_true",
                        help="random inputs of the right shapes and dtypes (the default)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nova", description="Nova accelerator compiler")
    parser.add_argument("--version", action=_Versions)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo", help="the main job: compile a GPT-style decoder, run it on the simulator, "
        "check it against torch"
    )
    demo.add_argument("--example", default=None, choices=examples.available(),
                      help="instead, round-trip a hand-written nova kernel through nova-opt")
    demo.add_argument("--target", default="nova-t1", help="target name or .json path")
    demo.add_argument("--chips", type=int, default=0, help="chips in the system (0: target's)")
    demo.add_argument("--trace", default=None, help="write the run's Chrome/Perfetto timeline here")
    demo.add_argument("--train", action="store_true",
                      help="instead, compile a training step (forward, backward, AdamW) "
                           "and train beside torch eager, printing loss, step time and MFU")
    demo.add_argument("--steps", type=_positive, default=TRAIN_DEMO_STEPS,
                      help=f"training steps of --train (default {TRAIN_DEMO_STEPS})")
    demo.add_argument("--plot", default="nova-train-loss.png", metavar="PATH",
                      help="--train's loss-curve PNG (written when matplotlib is installed; "
                           "default %(default)s)")
    demo.add_argument("--parallel", action="store_true",
                      help="also run the model with TP=4, DP=2 x TP=4 and PP=2 x 4 "
                           "microbatches on --target (a multi-chip system) and compare")
    demo.set_defaults(run=_demo)

    opt = commands.add_parser(
        "opt", help="run nova-opt on a file with the given pass flags",
        description="Passes every flag after FILE to nova-opt, "
        "e.g. nova opt kernel.mlir --nova-attach-target=target=nova-t1",
    )
    opt.add_argument("file", help="MLIR file, or - for stdin")
    opt.add_argument("passes", nargs=argparse.REMAINDER, help="nova-opt flags")
    opt.set_defaults(run=_opt)

    compile_ = commands.add_parser(
        "compile", help="compile a PyTorch model file to a .novaprog program",
        description="Exports the model a Python file defines and compiles it for a Nova target.",
        epilog=COMPILE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    compile_.add_argument("model", help="Python file defining the model (see below)")
    compile_.add_argument("-o", "--output", help="program to write (default: MODEL with .novaprog)")
    compile_.add_argument("--target", default="nova-t1", help="target name or .json path")
    compile_.add_argument("--chips", type=int, default=1,
                          help="chips of the system (default 1; 0: the target's)")
    compile_.add_argument("--dump-dir", help="folder that receives the IR of every stage")
    compile_.set_defaults(run=_compile)

    run = commands.add_parser("run", help="run a program on the simulator and print its outputs")
    run.add_argument("program", help=".novaprog (or bare .nova binary)")
    _add_input_flags(run)
    run.add_argument("-o", "--output", help="write the outputs to this .npz")
    run.set_defaults(run=_run)

    profile = commands.add_parser(
        "profile", help="run a program, print the performance report, the time per source "
        "line and write a Chrome trace")
    profile.add_argument("program", help=".novaprog (or bare .nova binary)")
    _add_input_flags(profile)
    profile.add_argument("--by", default="line", choices=("line", "op", "module", "opcode", "instruction"),
                         help="rows of the profile table: the model's source line (default), "
                              "the op's own line (innermost frame), the opcode or the instruction")
    profile.add_argument("--top", type=int, default=20, help="rows shown, largest first (0: all)")
    profile.add_argument("--timing-only", action="store_true",
                         help="simulate shapes and costs only (no numbers, no inputs, no memory): "
                              "the same simulated times, for programs too large to compute")
    profile.add_argument("--trace", help="trace file to write (default: PROGRAM with .trace.json)")
    profile.set_defaults(run=_profile)

    inspect = commands.add_parser(
        "inspect", help="print a program's header, target, sections, I/O table and disassembly")
    inspect.add_argument("program", help=".novaprog or .nova file")
    inspect.add_argument("--no-code", action="store_true", help="leave out the disassembly")
    inspect.set_defaults(run=_inspect)

    targets = commands.add_parser(
        "targets", help="list the target files: chips, topology, peak FLOP/s and HBM per chip")
    targets.set_defaults(run=_targets)

    from nova.cli.calibrate import add_parser as add_calibrate  # nova calibrate (cli/calibrate.py)
    add_calibrate(commands)
    from nova.cli.cache import add_parser as add_cache  # nova cache (cli/cache.py)
    add_cache(commands)
    from nova.cli.traces import add_parser as add_traces  # nova merge-traces (cli/traces.py)
    add_traces(commands)
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
    except (NovaError, ValueError, OSError) as error:  # every Nova error is a NovaError
        print(f"nova: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
