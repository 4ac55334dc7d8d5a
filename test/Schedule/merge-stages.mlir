// RUN: nova-opt %s --split-input-file --nova-merge-stages=microbatches=2 -verify-diagnostics | FileCheck %s

// Two stages, two microbatches: stage 0 (chip 0) computes each microbatch
// and sends it to chip 1 on channel i; stage 1 receives it into a fresh HBM
// buffer and returns both outputs. Both functions take every parameter and
// both microbatch inputs. The shared global is kept once, the clashing one
// renamed for stage 1.
// CHECK-LABEL: module
// CHECK-SAME: nova.target = #nova.target<name = "tiny"
// CHECK-DAG: memref.global "private" constant @scale : memref<4xf32, #nova.memory_space<hbm>> = dense<2.000000e+00>
// CHECK-DAG: memref.global "private" constant @bias : memref<4xf32, #nova.memory_space<hbm>> = dense<1.000000e+00>
// CHECK-DAG: memref.global "private" constant @bias_stage1 : memref<4xf32, #nova.memory_space<hbm>> = dense<3.000000e+00>
// CHECK-LABEL: func.func @stage0
// CHECK-SAME: (%[[W0:.*]]: memref<4xf32, #nova.memory_space<hbm>>, %[[W1:.*]]: memref<4xf32, #nova.memory_space<hbm>>, %[[X0:.*]]: memref<4xf32, #nova.memory_space<hbm>>, %[[X1:.*]]: memref<4xf32, #nova.memory_space<hbm>>) -> (memref<4xf32, #nova.memory_space<hbm>>, memref<4xf32, #nova.memory_space<hbm>>)
// CHECK-SAME: attributes {nova.chips = array<i64: 0>}
// CHECK: memref.copy %[[X0]], %{{.*}}
// CHECK: %[[S0:.*]] = nova.send ins(%{{.*}}) to 1 channel 0
// CHECK: memref.copy %[[X1]], %{{.*}}
// CHECK: %[[S1:.*]] = nova.send ins(%{{.*}}) to 1 channel 1
// CHECK: nova.wait %[[S0]], %[[S1]]
// CHECK: return
// CHECK-LABEL: func.func @stage1
// CHECK-SAME: attributes {nova.chips = array<i64: 1>}
// CHECK: %[[B0:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4xf32, #nova.memory_space<hbm>>
// CHECK: %[[R0:.*]] = nova.recv outs(%[[B0]] : {{.*}}) from 0 channel 0
// CHECK: nova.wait %[[R0]]
// CHECK: memref.get_global @bias_stage1
// CHECK: memref.copy %{{.*}}, %[[Y0:[^ ]*]]
// CHECK: nova.recv outs(%{{.*}}) from 0 channel 1
// CHECK: memref.copy
// CHECK: return %[[Y0]], %{{.*}}
// CHECK-NOT: module @
!m = memref<4xf32, #nova.memory_space<hbm>>
module {
  module @s0 attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 65536, sram_gbps = 400, acc_bytes = 8192, hbm_bytes = 1048576, hbm_gbps = 100, dma_engines = 2, chips = 2, topology = switch, link_gbps = 50, link_latency_ns = 500>} {
    memref.global "private" constant @scale : !m = dense<2.0>
    memref.global "private" constant @bias : !m = dense<1.0>
    func.func @forward(%w: !m, %x: !m) -> !m {
      %b = memref.get_global @bias : !m
      %y = memref.alloc() : !m
      memref.copy %x, %y : !m to !m
      return %y : !m
    }
  }
  module @s1 {
    memref.global "private" constant @scale : !m = dense<2.0>
    memref.global "private" constant @bias : !m = dense<3.0>
    func.func @forward(%w: !m, %x: !m) -> !m {
      %b = memref.get_global @bias : !m
      %y = memref.alloc() : !m
      memref.copy %b, %y : !m to !m
      return %y : !m
    }
  }
}

// -----

!m = memref<4xf32, #nova.memory_space<hbm>>
!n = memref<8xf32, #nova.memory_space<hbm>>
module {
  module {
    func.func @forward(%x: !m) -> !m {
      return %x : !m
    }
  }
  module {
    // expected-error @+1 {{stage 1 takes 'memref<8xf32, #nova.memory_space<hbm>>' but stage 0 returns 'memref<4xf32, #nova.memory_space<hbm>>'}}
    func.func @forward(%x: !n) -> !n {
      return %x : !n
    }
  }
}

// -----

!m = memref<4xf32, #nova.memory_space<hbm>>
module {
  // expected-error @+1 {{stage 0 holds 2 functions, expected one}}
  module {
    func.func @a(%x: !m) -> !m {
      return %x : !m
    }
    func.func @b(%x: !m) -> !m {
      return %x : !m
    }
  }
}

// -----

!m = memref<4xf32, #nova.memory_space<hbm>>
module {
  // expected-error @+1 {{outside a stage module}}
  func.func @loose(%x: !m) -> !m {
    return %x : !m
  }
}

// -----

// The name a clash would be renamed to is taken in the stage: a fresh one.
!m = memref<4xf32, #nova.memory_space<hbm>>
// CHECK-DAG: memref.global "private" constant @bias : {{.*}} = dense<1.000000e+00>
// CHECK-DAG: memref.global "private" constant @bias_stage1_1 : {{.*}} = dense<3.000000e+00>
// CHECK-DAG: memref.global "private" constant @bias_stage1 : {{.*}} = dense<5.000000e+00>
// CHECK-LABEL: func.func @stage1
// CHECK: memref.get_global @bias_stage1_1
// CHECK: memref.get_global @bias_stage1 :
module {
  module {
    memref.global "private" constant @bias : !m = dense<1.0>
    func.func @forward(%x: !m) -> !m {
      %b = memref.get_global @bias : !m
      return %x : !m
    }
  }
  module {
    memref.global "private" constant @bias : !m = dense<3.0>
    memref.global "private" constant @bias_stage1 : !m = dense<5.0>
    func.func @forward(%x: !m) -> !m {
      %b = memref.get_global @bias : !m
      %c = memref.get_global @bias_stage1 : !m
      memref.copy %b, %x : !m to !m
      memref.copy %c, %x : !m to !m
      return %x : !m
    }
  }
}

// -----

module {
  module {
    // expected-error @+1 {{stage 0: expected buffers (the nova level, after nova-lower-to-tiles)}}
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      return %x : tensor<4xf32>
    }
  }
}
