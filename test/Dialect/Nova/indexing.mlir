// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s -mlir-print-op-generic | nova-opt | FileCheck %s

// Round trip of the integer and indexing ops: iota, fill from a register,
// integer elementwise kinds, argmax, assert, the indexed DMAs (gather and
// the accumulating scatter) and the row scatter-add on tensors and buffers.

!ids = memref<4x8xi64, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @integer_tiles
// CHECK: nova.iota outs(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>) dim 1
// CHECK: nova.fill 0 value(%{{.*}}) outs(%{{.*}} : memref<1x1xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <floordiv> ins(%{{.*}}, %{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>, memref<1x1xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <cmp_lt> scalar(3) ins(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>) outs(%{{.*}} : memref<4x8xi1, #nova.memory_space<sram>>)
// CHECK: nova.assert ins(%{{.*}} : memref<4x8xi1, #nova.memory_space<sram>>) "position in range"
// CHECK: nova.reduce <argmax> ins(%{{.*}} : memref<4x8xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<4x1xi64, #nova.memory_space<sram>>) dim 1
func.func @integer_tiles(%i: index, %x: memref<4x8xf32, #nova.memory_space<sram>>) {
  %a = memref.alloc() : !ids
  %o = memref.alloc() : memref<1x1xi64, #nova.memory_space<sram>>
  %q = memref.alloc() : !ids
  %m = memref.alloc() : memref<4x8xi1, #nova.memory_space<sram>>
  %r = memref.alloc() : memref<4x1xi64, #nova.memory_space<sram>>
  nova.iota outs(%a : !ids) dim 1
  nova.fill 0 value(%i) outs(%o : memref<1x1xi64, #nova.memory_space<sram>>)
  nova.elementwise <floordiv> ins(%a, %o : !ids, memref<1x1xi64, #nova.memory_space<sram>>) outs(%q : !ids)
  nova.elementwise <cmp_lt> scalar(3) ins(%q : !ids) outs(%m : memref<4x8xi1, #nova.memory_space<sram>>)
  nova.assert ins(%m : memref<4x8xi1, #nova.memory_space<sram>>) "position in range"
  nova.reduce <argmax> ins(%x : memref<4x8xf32, #nova.memory_space<sram>>) outs(%r : memref<4x1xi64, #nova.memory_space<sram>>) dim 1
  return
}

// CHECK-LABEL: func.func @gather_rows
// CHECK: %[[T:.*]] = nova.gather %{{.*}}[%{{.*}}] into %{{.*}} : memref<128x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<sram>> -> memref<4x8xf32, #nova.memory_space<sram>>
// CHECK: nova.wait %[[T]]
func.func @gather_rows(%table: memref<128x8xf32, #nova.memory_space<hbm>>, %pos: !ids, %rows: memref<4x8xf32, #nova.memory_space<sram>>) {
  %t = nova.gather %table[%pos] into %rows : memref<128x8xf32, #nova.memory_space<hbm>>, !ids -> memref<4x8xf32, #nova.memory_space<sram>>
  nova.wait %t
  return
}

// CHECK-LABEL: func.func @scatter_rows
// CHECK: %[[T:.*]] = nova.scatter %{{.*}}[%{{.*}}] into %{{.*}} accumulate : memref<4x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<sram>> -> memref<128x8xf32, #nova.memory_space<hbm>>
// CHECK: nova.wait %[[T]]
func.func @scatter_rows(%rows: memref<4x8xf32, #nova.memory_space<hbm>>, %pos: !ids, %table: memref<128x8xf32, #nova.memory_space<hbm>>) {
  %t = nova.scatter %rows[%pos] into %table accumulate : memref<4x8xf32, #nova.memory_space<hbm>>, !ids -> memref<128x8xf32, #nova.memory_space<hbm>>
  nova.wait %t
  return
}

// CHECK-LABEL: func.func @scatter_add_tensors
// CHECK: %[[R:.*]] = nova.scatter_add ins(%{{.*}}, %{{.*}} : tensor<6x16xf32>, tensor<6x16xi64>) outs(%{{.*}} : tensor<10x16xf32>) -> tensor<10x16xf32>
// CHECK: return %[[R]]
func.func @scatter_add_tensors(%v: tensor<6x16xf32>, %pos: tensor<6x16xi64>, %base: tensor<10x16xf32>) -> tensor<10x16xf32> {
  %r = nova.scatter_add ins(%v, %pos : tensor<6x16xf32>, tensor<6x16xi64>) outs(%base : tensor<10x16xf32>) -> tensor<10x16xf32>
  return %r : tensor<10x16xf32>
}

// CHECK-LABEL: func.func @scatter_add_buffers
// CHECK: nova.scatter_add ins(%{{.*}}, %{{.*}} : memref<6x16xbf16>, memref<6x16xi32>) outs(%{{.*}} : memref<10x16xbf16>)
// CHECK-NOT: ->
func.func @scatter_add_buffers(%v: memref<6x16xbf16>, %pos: memref<6x16xi32>, %base: memref<10x16xbf16>) {
  nova.scatter_add ins(%v, %pos : memref<6x16xbf16>, memref<6x16xi32>) outs(%base : memref<10x16xbf16>)
  return
}

// Immediates round-trip exactly: an i64 above 2^53 keeps every bit, a
// float tile's non-finite value stays f64 bits.
// CHECK-LABEL: func.func @exact_immediates
// CHECK: nova.fill -7046029254386353131 outs(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <xor> scalar(9223372036854775807) ins(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <mul> scalar(-9223372036854775808) ins(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: nova.fill 1 outs(%{{.*}} : memref<4x8xi1, #nova.memory_space<sram>>)
// CHECK: nova.fill 0xFFF0000000000000 outs(%{{.*}} : memref<4x8xf32, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <mul> scalar(5.000000e-01) ins(%{{.*}} : memref<4x8xf32, #nova.memory_space<sram>>)
func.func @exact_immediates(%x: memref<4x8xf32, #nova.memory_space<sram>>) {
  %a = memref.alloc() : !ids
  %m = memref.alloc() : memref<4x8xi1, #nova.memory_space<sram>>
  nova.fill -7046029254386353131 outs(%a : !ids)
  nova.elementwise <xor> scalar(9223372036854775807) ins(%a : !ids) outs(%a : !ids)
  nova.elementwise <mul> scalar(-9223372036854775808) ins(%a : !ids) outs(%a : !ids)
  nova.fill 1 outs(%m : memref<4x8xi1, #nova.memory_space<sram>>)
  nova.fill 0xFFF0000000000000 outs(%x : memref<4x8xf32, #nova.memory_space<sram>>)
  nova.elementwise <mul> scalar(0.5) ins(%x : memref<4x8xf32, #nova.memory_space<sram>>) outs(%x : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}
