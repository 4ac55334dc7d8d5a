// RUN: nova-opt %s --convert-nova-to-isa -split-input-file -verify-diagnostics

func.func @negative_alloc_without_address() {
  // expected-error @+1 {{'memref.alloc' op has no `nova.address` (run nova-plan-memory first)}}
  %s = memref.alloc() : memref<64xf32, #nova.memory_space<sram>>
  nova.fill 0.0 outs(%s : memref<64xf32, #nova.memory_space<sram>>)
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0 has no `nova.address` (run nova-plan-memory first)}}
func.func @negative_argument_without_address(%a: memref<64xf32, #nova.memory_space<hbm>>) {
  return
}

// -----

func.func @negative_returns_value(%a: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64}) -> memref<64xf32, #nova.memory_space<hbm>> {
  // expected-error @+1 {{'func.return' op returns values; results must be out-params (run nova-plan-memory first)}}
  return %a : memref<64xf32, #nova.memory_space<hbm>>
}

// -----

func.func @negative_unsupported_op() {
  %c = arith.constant true
  %a = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
  // expected-error @+1 {{'scf.if' op has no nova_isa lowering}}
  scf.if %c {
    nova.fill 0.0 outs(%a : memref<64xf32, #nova.memory_space<sram>>)
  }
  return
}

// -----

func.func @negative_dynamic_shape() {
  %n = arith.constant 4 : index
  // expected-error @+1 {{'memref.alloc' op buffer has a dynamic shape}}
  %s = memref.alloc(%n) {nova.address = 0 : i64} : memref<?xf32, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_iter_args(%a: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.for' op loop-carried values other than !nova.token are not supported}}
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%x = %c0) -> (index) {
    scf.yield %x : index
  }
  return
}

// -----

// Rank 5 with no unit dimension and no two dimensions contiguous: nothing
// collapses into the descriptor's 4.
func.func @negative_rank5(%a: memref<2x2x2x2x2xf32, strided<[243, 81, 27, 9, 3]>, #nova.memory_space<sram>> {nova.address = 0 : i64}) {
  // expected-error @+1 {{'nova.fill' op operand has rank 5, a tile descriptor holds at most 4 dimensions}}
  nova.fill 0.0 outs(%a : memref<2x2x2x2x2xf32, strided<[243, 81, 27, 9, 3]>, #nova.memory_space<sram>>)
  return
}
