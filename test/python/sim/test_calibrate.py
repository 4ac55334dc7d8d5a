"""nova calibrate: microbenchmarks, the table format, the least-squares fit and the command."""

import json
import re

import numpy as np
import pytest

from asm import ROOT
from nova.cli.main import main
from nova.sim.calibrate import Row, apply, fit, geomean_error, parameters, read_table, write_table
from nova.sim.microbench import Bench, CalibrationError, build, simulate
from nova.sim.target import load_target

T1 = ROOT / "targets" / "nova-t1.json"

#: Constants the synthetic "hardware" has 1.3x off the starting target.
PERTURBED = {"hbm_gbps": 1.3, "link_gbps": 1.3, "link_latency_ns": 1.3, "timing.dma_setup_cycles": 1.3,
             "timing.matmul_row_cycles": 1.3, "timing.vector_overhead_cycles": 1.3,
             "timing.vector_transcendental_factor": 1.3}

#: Small shapes that between them constrain every perturbed constant.
BENCHES = (
    [Bench("matmul", (m, 128, 128), "bf16") for m in (32, 256, 1024, 2048)]
    + [Bench("matmul", (512, 256, 256), "bf16"), Bench("matmul", (256, 128, 128), "f32")]
    + [Bench("dma.hbm-sram", s, "bf16") for s in ((1, 64), (16, 256), (256, 256), (1024, 1024))]
    + [Bench("dma.sram-hbm", (512, 512), "f32")]
    + [Bench("dma.peer", s, "bf16") for s in ((1, 64), (64, 256), (1024, 1024))]
    + [Bench("vector.exp", s, "f32") for s in ((128, 1), (128, 256), (128, 4096))]
    + [Bench("vector.add", s, "f32") for s in ((128, 1), (128, 4096))]
    + [Bench("all_reduce", (n,), "f32", chips=4) for n in (1024, 1 << 20)]
)


def t1():
    return load_target(T1)


def true_target():
    t = t1()
    return apply(t, {p: (t.timing[p[7:]] if p.startswith("timing.") else getattr(t, p)) * f
                     for p, f in PERTURBED.items()})


def measured(target, benches=BENCHES, noise=0.02, seed=0):
    """Rows 'measured' on ``target``: its simulated time x (1 + U(-noise, noise))."""
    rng = np.random.default_rng(seed)
    return [Row(i + 2, b, simulate(b, target) * (1 + rng.uniform(-noise, noise))) for i, b in enumerate(benches)]


def value(target, name):
    return target.timing[name[7:]] if name.startswith("timing.") else getattr(target, name)


def test_fit_recovers_perturbed_constants_from_noisy_rows():
    truth = true_target()
    result = fit(t1(), measured(truth))
    status = {p.name: p for p in result.parameters}
    for name in PERTURBED:
        assert status[name].status == "fitted", status[name]
        assert value(result.target, name) == pytest.approx(value(truth, name), rel=0.05), name
    # Every constant the fit moved lands near the truth, not only the perturbed ones.
    for p in result.parameters:
        if p.status == "fitted":
            assert p.after == pytest.approx(value(truth, p.name), rel=0.05), p
            assert 0 < p.stderr < 0.05 * abs(p.after), p  # the rows pin it
        else:
            assert p.after == p.before, p
    assert result.geomean_error_before > 0.1
    assert result.geomean_error_after < 0.02  # the noise is +-2 %
    assert len(result.rows) == len(BENCHES)


def test_constants_no_row_depends_on_stay_and_are_reported():
    rows = measured(true_target(), [b for b in BENCHES if b.kind.startswith("dma.hbm")])
    result = fit(t1(), rows)
    status = {p.name: p.status for p in result.parameters}
    assert status["timing.matmul_row_cycles"] == "unconstrained"
    assert status["timing.vector_overhead_cycles"] == "unconstrained"
    assert status["link_gbps"] == "unconstrained"
    assert status["hbm_gbps"] == status["timing.dma_setup_cycles"] == "fitted"
    # Every time of these rows is cycles / clock or bytes / bandwidth: the clock is
    # only constrained together with the DMA setup cycles.
    assert status["clock_mhz"] == "degenerate"
    assert result.target.timing["matmul_row_cycles"] == t1().timing["matmul_row_cycles"]
    assert result.target.clock_mhz == t1().clock_mhz


def test_only_and_hold_limit_what_moves():
    rows = measured(true_target(), BENCHES[6:10])
    result = fit(t1(), rows, only=["hbm_gbps"])
    moved = [p.name for p in result.parameters if p.status == "fitted"]
    assert moved == ["hbm_gbps"]
    result = fit(t1(), rows, hold=["hbm_gbps"])
    assert {p.name: p.status for p in result.parameters}["hbm_gbps"] == "held"
    with pytest.raises(CalibrationError, match="'nonsense' is not a calibratable constant"):
        fit(t1(), rows, only=["nonsense"])


def test_parameters_come_from_the_schema():
    names = [p.name for p in parameters()]
    for n in ("clock_mhz", "hbm_gbps", "sram_gbps", "link_gbps", "link_latency_ns",
              "timing.dma_setup_cycles", "timing.matmul_row_cycles", "timing.vector_overhead_cycles"):
        assert n in names
    for n in ("chips", "sram_bytes", "matrix_rows", "timing.matmul_weight_overlap",
              "timing.collective_algorithm"):
        assert n not in names


def test_geomean_error():
    assert geomean_error([110.0, 100 / 1.1], [100.0, 100.0]) == pytest.approx(0.1)
    assert geomean_error([5.0], [5.0]) == 0.0


def test_microbenchmarks_run_timing_only_on_their_systems():
    t = t1()
    mm = build(Bench("matmul", (300, 200, 130), "bf16"), t)
    assert len(mm.chips) == 1 and mm.target.chips == 1
    # K cut by 128 rows, N by 128 columns: 2 x 2 tiles, the second K tile accumulating.
    assert sum(1 for i in mm.chips[0].code if i.name == "matmul") == 4
    peer = build(Bench("dma.peer.strided", (16, 16), "i8", chips=2), t)
    assert peer.target.chips == 2
    ar = build(Bench("all_reduce", (1024,), "f32", chips=4), t)
    assert ar.target.chips == 4 and len(ar.chips) == 4
    assert simulate(Bench("dma.hbm-sram", (64, 64), "bf16"), t) > t.dma_setup_ns
    small, big = (simulate(Bench("vector.exp", (128, n), "f32"), t) for n in (1, 1024))
    assert big > small > 0
    contiguous = simulate(Bench("dma.hbm-sram", (256, 256), "f32"), t)
    assert simulate(Bench("dma.hbm-sram.strided", (256, 256), "f32"), t) >= contiguous


@pytest.mark.parametrize("bench, message", [
    (("matmul", (4, 4), "bf16"), "matmul shape must be MxKxN"),
    (("matmul", (4, 4, 4), "i32"), "matmul dtype must be one of"),
    (("dma.hbm-sdram", (4,), "f32"), "unknown dma kind"),
    (("dma.hbm-sram.strided", (4,), "f32"), "rank >= 2"),
    (("vector.frobnicate", (4,), "f32"), "unknown vector kind"),
    (("conv", (4,), "f32"), "unknown kind 'conv'"),
    (("matmul", (4, 4, 4), "bf16", 4), "only collectives and dma.peer take chips"),
    (("all_reduce", (4,), "f32", 0, "tree"), "unknown algorithm 'tree'"),
    (("all_reduce", (4,), "f16x", 2), "unknown dtype"),
])
def test_bad_benchmarks_are_calibration_errors(bench, message):
    with pytest.raises(CalibrationError, match=message):
        Bench(*bench)


def test_a_row_forces_its_collective_algorithm():
    t = t1()
    times = {a: simulate(Bench("all_reduce", (1 << 16,), "f32", chips=4, algorithm=a), t)
             for a in ("ring", "biring", "direct", "rhd")}
    assert len(set(times.values())) > 1
    assert simulate(Bench("all_reduce", (1 << 16,), "f32", chips=4), t) == pytest.approx(min(times.values()))
    with pytest.raises(CalibrationError, match="ran this collective as"):
        simulate(Bench("all_reduce", (1 << 16,), "f32", chips=6, algorithm="rhd"), t)  # rhd needs 2^k chips


def test_a_shape_too_large_for_the_memories_is_an_error():
    with pytest.raises(CalibrationError, match="bytes of sram"):
        simulate(Bench("matmul", (8192, 8192, 128), "f32"), t1())
    with pytest.raises(CalibrationError, match="does not divide by the 4 chips"):
        simulate(Bench("reduce_scatter", (6, 4), "f32", chips=4), t1())


# The table format --------------------------------------------------------------------

GOOD = """# measured somewhere
kind,shape,dtype,measured_ns,chips,algorithm,note
matmul,256x128x128,bf16,400.5,,,one tile
all_reduce,1024,f32,9000,4,,
"""


def test_read_table(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(GOOD)
    rows = read_table(p)
    assert [r.line for r in rows] == [3, 4]
    assert rows[0].bench == Bench("matmul", (256, 128, 128), "bf16") and rows[0].note == "one tile"
    assert rows[1].bench.chips == 4 and rows[1].measured_ns == 9000.0
    q = tmp_path / "round.csv"
    write_table(q, rows, "synthetic")
    assert [(r.bench, r.measured_ns) for r in read_table(q)] == [(r.bench, r.measured_ns) for r in rows]


@pytest.mark.parametrize("text, message", [
    ("", "no header line"),
    ("kind,shape,dtype\nmatmul,1x1x1,bf16\n", "header lacks column(s) measured_ns"),
    ("kind,shape,dtype,measured_ns,speed\n", "t.csv:1: unknown column(s) 'speed'"),
    ("kind,shape,dtype,measured_ns\n", "has a header but no rows"),
    ("kind,shape,dtype,measured_ns\n#c\nmatmul,2x2,bf16,5\n", "t.csv:3: matmul shape must be MxKxN"),
    ("kind,shape,dtype,measured_ns\nmatmul,2x2x2,bf16,fast\n", "t.csv:2: measured_ns 'fast' is not a number"),
    ("kind,shape,dtype,measured_ns\nmatmul,2x2x2,bf16,-1\n", "t.csv:2: measured_ns must be a positive"),
    ("kind,shape,dtype,measured_ns\nmatmul,2xtwo,bf16,1\n", "t.csv:2: shape '2xtwo' is not sizes"),
    ("kind,shape,dtype,measured_ns\nfft,64,f32,1\n", "t.csv:2: unknown kind 'fft'"),
    ("kind,shape,dtype,measured_ns\nmatmul,2x2x2,bf16,1,9\n", "t.csv:2: 5 fields, the header has 4"),
    ("kind,shape,dtype,measured_ns,chips\nall_reduce,8,f32,1,two\n", "t.csv:2: chips 'two' is not an integer"),
])
def test_bad_tables_name_the_line_and_the_problem(tmp_path, text, message):
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(CalibrationError, match=re.escape(message)):
        read_table(p)


def test_the_shipped_example_table_is_labelled_synthetic_and_parses():
    path = ROOT / "benchmarks" / "data" / "calibration-example.csv"
    assert path.read_text().startswith("# SYNTHETIC")
    rows = read_table(path)
    assert {r.bench.kind for r in rows} >= {"matmul", "dma.hbm-sram", "dma.peer", "all_reduce"}
    start = load_target(ROOT / "benchmarks" / "data" / "nova-t1-ws-ab.json")
    assert not start.timing["matmul_weight_overlap"] and not start.timing["collective_reduce_on_vector"]


def test_missing_table():
    with pytest.raises(CalibrationError, match="cannot read calibration table"):
        read_table("/nonexistent/table.csv")


# The command ---------------------------------------------------------------------------

def test_cli_prints_residuals_and_writes_a_loadable_target(tmp_path, capsys):
    table = tmp_path / "measured.csv"
    benches = [b for b in BENCHES if b.kind.startswith("dma.")]
    write_table(table, measured(true_target(), benches), "synthetic: nova-t1 with 1.3x constants, +-2 % noise")
    out = tmp_path / "t1-cal.json"
    assert main(["calibrate", str(table), "--target", str(T1), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    for b in benches:
        assert b.label in text
    assert "geomean error:" in text and "% before" in text and f"wrote {out}" in text
    cal = load_target(out)
    assert cal.hbm_gbps == pytest.approx(true_target().hbm_gbps, rel=0.05)
    assert cal.matrix_rows == t1().matrix_rows and cal.timing["matmul_row_cycles"] == 1
    assert "calibrated from measured.csv" in cal.description and cal.name == "nova-t1-cal"
    assert json.loads(out.read_text())["timing"]["dma_setup_cycles"] == pytest.approx(64 * 1.3, rel=0.05)


def test_cli_by_target_name(tmp_path, capsys):
    table = tmp_path / "m.csv"
    table.write_text("kind,shape,dtype,measured_ns\ndma.hbm-sram,256x256,bf16,300\n"
                     "dma.hbm-sram,4x64,bf16,60\n")
    assert main(["calibrate", str(table), "--target", "nova-t1"]) == 0
    assert "hbm_gbps" in capsys.readouterr().out


@pytest.mark.parametrize("text, message", [
    (None, "cannot read calibration table"),
    ("kind,shape,dtype,measured_ns\nvector.not,8x8,f32,10\n", "m.csv:2: vector.not 8x8 f32: instruction 3 (vunary)"),
    ("kind,shape,dtype,measured_ns\nmatmul,8192x8192x8,f32,10\n", "m.csv:2: matmul 8192x8192x8 f32: 268697600 bytes of sram for A and B"),
    ("kind,shape,dtype,measured_ns\nmatmul,8x8,bf16,10\n", "m.csv:2: matmul shape must be MxKxN"),
    ("kind,shape,dtype,measured_ns\nfft,8,f32,10\n", "m.csv:2: unknown kind 'fft'"),
])
def test_cli_errors_are_one_line_and_exit_2(tmp_path, capsys, text, message):
    table = tmp_path / "m.csv"
    if text is not None:
        table.write_text(text)
    assert main(["calibrate", str(table), "--target", str(T1)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nova: error: ") and message in err and err.count("\n") == 1


def test_cli_unwritable_output(tmp_path, capsys):
    table = tmp_path / "m.csv"
    table.write_text("kind,shape,dtype,measured_ns\ndma.hbm-sram,4x64,bf16,60\n")
    assert main(["calibrate", str(table), "--target", str(T1), "-o", str(tmp_path / "no" / "t.json")]) == 2
    assert capsys.readouterr().err.startswith("nova: error: ")


def test_cli_unknown_target(tmp_path, capsys):
    table = tmp_path / "m.csv"
    table.write_text(GOOD)
    assert main(["calibrate", str(table), "--target", "no-such-target"]) == 2
    assert "cannot find target 'no-such-target'" in capsys.readouterr().err
