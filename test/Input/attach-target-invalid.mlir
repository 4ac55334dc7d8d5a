// RUN: not nova-opt %s --nova-attach-target="target=no-such-target" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/not-json.json" 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/missing-field.json" 2>&1 | FileCheck %s --check-prefix=FIELD
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/bad-topology.json" 2>&1 | FileCheck %s --check-prefix=TOPOLOGY
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/acc-larger-than-sram.json" 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/unknown-key.json" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/string-field.json" 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/bad-timing.json" 2>&1 | FileCheck %s --check-prefix=TIMING
// RUN: not nova-opt %s --nova-attach-target="target=tiny chips=-2" 2>&1 | FileCheck %s --check-prefix=CHIPS
// RUN: not nova-opt %s --nova-attach-target="target=tiny" 2>&1 | FileCheck %s --check-prefix=TOOBIG
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/nic-without-nodes.json" 2>&1 | FileCheck %s --check-prefix=NONODES
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/nodes-without-nic.json" 2>&1 | FileCheck %s --check-prefix=NONIC
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/bad-nics.json" 2>&1 | FileCheck %s --check-prefix=NICS
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/zero-nic-gbps.json" 2>&1 | FileCheck %s --check-prefix=NICBW
// RUN: not nova-opt %s --nova-attach-target="target=%S/Inputs/two-node.json chips=3" 2>&1 | FileCheck %s --check-prefix=NODECHIPS

// Every way a target can be wrong is a diagnostic on the module, not a crash.
// MISSING: error: cannot find target 'no-such-target' (looked in {{.*}}targets)
// JSON: error: target file '{{.*}}not-json.json' is not valid JSON
// FIELD: error: target file '{{.*}}missing-field.json': missing key 'hbm_gbps' (an integer)
// UNKNOWN: error: target file '{{.*}}unknown-key.json': unknown key 'hbm_gpbs' (known: name, description, clock_mhz,
// TYPE: error: target file '{{.*}}string-field.json': key 'clock_mhz' must be an integer, got a string
// TIMING: error: target file '{{.*}}bad-timing.json': timing key 'queue_depth' must be a number, bool or string, got an array
// TOPOLOGY: error: target file '{{.*}}bad-topology.json': unknown topology 'hypercube' (expected switch, ring, torus2d or pcie)
// VERIFY: error: target file '{{.*}}acc-larger-than-sram.json': accumulator (1048576 bytes) must not be larger than sram (16384 bytes)
// CHIPS: error: chips must not be negative, got -2
// NONODES: error: target file '{{.*}}nic-without-nodes.json': target field 'nic_gbps' needs chips_per_node (the network joins nodes)
// NONIC: error: target file '{{.*}}nodes-without-nic.json': target field 'nic_latency_ns' must be given (>= 0) when chips_per_node is set, got -1
// NICS: error: target file '{{.*}}bad-nics.json': target field 'nics_per_node' must divide chips_per_node (2), got 3
// NICBW: error: target file '{{.*}}zero-nic-gbps.json': key 'nic_gbps' must be positive, got 0
// NODECHIPS: error: target file '{{.*}}two-node.json': target field 'chips' must be a multiple of chips_per_node (2) or at most it, got 3

// Once attached, the tiny target's 8x8 matrix unit rejects this 16-wide tile.
// TOOBIG: error: 'nova.matmul' op output width 16 exceeds the matrix unit's 8 columns

func.func @matmul_tile_wider_than_tiny(%a: memref<8x8xf32, #nova.memory_space<sram>>,
                                       %b: memref<8x16xf32, #nova.memory_space<sram>>,
                                       %c: memref<8x16xf32, #nova.memory_space<acc>>) {
  nova.matmul ins(%a, %b : memref<8x8xf32, #nova.memory_space<sram>>, memref<8x16xf32, #nova.memory_space<sram>>)
              outs(%c : memref<8x16xf32, #nova.memory_space<acc>>)
  return
}
