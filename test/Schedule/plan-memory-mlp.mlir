// RUN: nova-opt %S/../Fixtures/mlp.mlir --pass-pipeline='builtin.module(nova-attach-target,nova-linalg-normalize,func.func(nova-tile),canonicalize,cse,nova-bufferize,canonicalize,cse,func.func(convert-linalg-to-nova),canonicalize,cse,func.func(nova-double-buffer),nova-plan-memory)' 2>&1 | FileCheck %s

// The whole MLP through the pipeline: the plan fits nova-t1 (the pass fails
// otherwise), the remark states the peaks against the capacities, the result
// is an out-param and every buffer has an address.

// CHECK: remark: sram peak {{[0-9]+}} bytes of 25165824, acc peak {{[0-9]+}} bytes of 2097152, hbm peak {{[0-9]+}} bytes of 34359738368
// CHECK-LABEL: func.func @forward(%arg0: memref
// CHECK-SAME: {nova.address = 0 : i64, nova.role = "input"}
// CHECK-SAME: nova.role = "output"})
// CHECK-SAME: attributes {nova.acc_peak = {{[0-9]+}} : i64, nova.hbm_peak = {{[0-9]+}} : i64, nova.sram_peak = {{[0-9]+}} : i64}
// CHECK-NOT: memref.alloc() :
// CHECK-NOT: memref.alloc() {alignment = 64 : i64} :
// CHECK: memref.alloc() {{{.*}}nova.address = {{[0-9]+}} : i64} : memref<{{.*}}, #nova.memory_space<sram>>
// CHECK-NOT: memref.alloc() :
// CHECK-NOT: memref.alloc() {alignment = 64 : i64} :
// CHECK: return{{$}}
