// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(convert-linalg-to-nova))' -split-input-file | FileCheck %s

// Integer payloads compute in their own type: floor division and the
// remainder keep i64 tiles, the comparison writes an i1 tile.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @int_floordiv_rem_cmp
// CHECK: nova.elementwise <floordiv> ins(%{{.*}}, %{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>, memref<4x8xi64, #nova.memory_space<sram>>) outs(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <rem> ins({{.*}}) outs(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <cmp_lt> ins({{.*}}) outs(%{{.*}} : memref<4x8xi1, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <select> ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<4x8xi1, #nova.memory_space<sram>>, memref<4x8xi64, #nova.memory_space<sram>>, memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK-NOT: linalg.generic
func.func @int_floordiv_rem_cmp(%a: memref<4x8xi64, #nova.memory_space<sram>>, %b: memref<4x8xi64, #nova.memory_space<sram>>, %o: memref<4x8xi64, #nova.memory_space<sram>>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<4x8xi64, #nova.memory_space<sram>>, memref<4x8xi64, #nova.memory_space<sram>>)
      outs(%o : memref<4x8xi64, #nova.memory_space<sram>>) {
  ^bb0(%x: i64, %y: i64, %out: i64):
    %q = arith.floordivsi %x, %y : i64
    %r = arith.remsi %x, %y : i64
    %lt = arith.cmpi slt, %q, %r : i64
    %s = arith.select %lt, %q, %r : i64
    linalg.yield %s : i64
  }
  return
}

// -----

// An embedding: the row comes from data, so its bounds are checked
// (torch-mlir's cf.assert and Nova's own check) before one indexed DMA
// gathers the rows at flat positions id * 8 + column.
#rows = affine_map<(d0, d1) -> (d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @embedding_gather
// CHECK-SAME: (%[[TABLE:.*]]: memref<16x8xf32, #nova.memory_space<hbm>>, %[[IDS:.*]]: memref<4xi64, #nova.memory_space<sram>>
// CHECK: %[[COL:.*]] = memref.alloc() : memref<1x8xi64, #nova.memory_space<sram>>
// CHECK: nova.iota outs(%[[COL]] : memref<1x8xi64, #nova.memory_space<sram>>) dim 1
// CHECK: nova.elementwise <cmp_lt> scalar(16)
// CHECK: nova.assert ins(%{{.*}} : memref<4x1xi1, #nova.memory_space<sram>>) "index must be smaller than dim size"
// CHECK: nova.assert ins(%{{.*}} : memref<4x1xi1, #nova.memory_space<sram>>) "index out of range: dimension 0 has size 16"
// CHECK: nova.elementwise <mul> scalar(8)
// CHECK: %[[POS:.*]] = memref.alloc() : memref<4x8xi64, #nova.memory_space<sram>>
// CHECK: nova.elementwise <add> ins({{.*}}) outs(%[[POS]] : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: %[[T:.*]] = nova.gather %[[TABLE]][%[[POS]]] into %[[ROWS:.*]] : memref<16x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<sram>> -> memref<4x8xf32, #nova.memory_space<sram>>
// CHECK: nova.wait %[[T]]
func.func @embedding_gather(%table: memref<16x8xf32, #nova.memory_space<hbm>>, %ids: memref<4xi64, #nova.memory_space<sram>>, %o: memref<4x8xf32, #nova.memory_space<sram>>) {
  %c16 = arith.constant 16 : index
  linalg.generic {indexing_maps = [#rows, #out], iterator_types = ["parallel", "parallel"]}
      ins(%ids : memref<4xi64, #nova.memory_space<sram>>) outs(%o : memref<4x8xf32, #nova.memory_space<sram>>) {
  ^bb0(%id: i64, %out: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %ok = arith.cmpi slt, %row, %c16 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = memref.load %table[%row, %col] : memref<16x8xf32, #nova.memory_space<hbm>>
    linalg.yield %v : f32
  }
  return
}

// -----

// linalg.index inside a tile loop: the tile's offset (the induction
// variable, a register) is filled into a unit tile and added to the iota.
#id1 = affine_map<(d0) -> (d0)>
#shift = affine_map<(d0)[s0] -> (d0 + s0)>
// CHECK-LABEL: func.func @iota_with_loop_offset
// CHECK: scf.for %[[IV:.*]] =
// CHECK:   nova.iota outs(%[[I:.*]] : memref<8xi64, #nova.memory_space<sram>>) dim 0
// CHECK:   nova.fill 0 value(%[[IV]]) outs(%[[OFF:.*]] : memref<1xi64, #nova.memory_space<sram>>)
// CHECK:   nova.elementwise <add> ins(%[[I]], %[[OFF]] : memref<8xi64, #nova.memory_space<sram>>, memref<1xi64, #nova.memory_space<sram>>)
// CHECK:   nova.elementwise <copy> ins(%{{.*}} : memref<8xi64, #nova.memory_space<sram>>) outs(%{{.*}} : memref<8xf32, #nova.memory_space<sram>>)
func.func @iota_with_loop_offset(%o: memref<32xf32, #nova.memory_space<sram>>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  scf.for %iv = %c0 to %c32 step %c8 {
    %t = memref.subview %o[%iv] [8] [1] : memref<32xf32, #nova.memory_space<sram>> to memref<8xf32, strided<[1], offset: ?>, #nova.memory_space<sram>>
    linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]}
        outs(%t : memref<8xf32, strided<[1], offset: ?>, #nova.memory_space<sram>>) {
    ^bb0(%out: f32):
      %i = linalg.index 0 : index
      %j = affine.apply #shift(%i)[%iv]
      %k = arith.index_cast %j : index to i64
      %f = arith.sitofp %k : i64 to f32
      linalg.yield %f : f32
    }
  }
  return
}

// -----

// An integer max reduction starts from the i64 minimum, folded away when
// the output was filled with it.
#in2 = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @int_max_reduction
// CHECK-NOT: nova.fill
// CHECK: nova.reduce <max> ins(%{{.*}} : memref<4x8xi32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<4x1xi32, #nova.memory_space<sram>>) dim 1
func.func @int_max_reduction(%x: memref<4x8xi32, #nova.memory_space<sram>>, %o: memref<4xi32, #nova.memory_space<sram>>) {
  %min = arith.constant -2147483648 : i32
  linalg.fill ins(%min : i32) outs(%o : memref<4xi32, #nova.memory_space<sram>>)
  linalg.generic {indexing_maps = [#in2, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8xi32, #nova.memory_space<sram>>) outs(%o : memref<4xi32, #nova.memory_space<sram>>) {
  ^bb0(%a: i32, %acc: i32):
    %m = arith.maxsi %a, %acc : i32
    linalg.yield %m : i32
  }
  return
}

// -----

// Integer constants above 2^53 stay exact (they were f64 immediates that
// rounded away their low bits): SplitMix64's increment as a multiplier, the
// i64 maximum as a xor mask, a fill of the increment and a product of two
// constants folded with wrap-around (GAMMA * 3 mod 2^64).
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @exact_int64_immediates
// CHECK: nova.fill -7046029254386353131 outs(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <mul> scalar(-7046029254386353131) ins(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <xor> scalar(9223372036854775807) ins(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <add> scalar(-2691343689449507777) ins(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
// CHECK-NOT: e+18
func.func @exact_int64_immediates(%a: memref<4x8xi64, #nova.memory_space<sram>>, %f: memref<4x8xi64, #nova.memory_space<sram>>, %o: memref<4x8xi64, #nova.memory_space<sram>>) {
  %gamma = arith.constant -7046029254386353131 : i64
  linalg.fill ins(%gamma : i64) outs(%f : memref<4x8xi64, #nova.memory_space<sram>>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xi64, #nova.memory_space<sram>>)
      outs(%o : memref<4x8xi64, #nova.memory_space<sram>>) {
  ^bb0(%x: i64, %out: i64):
    %max = arith.constant 9223372036854775807 : i64
    %c3 = arith.constant 3 : i64
    %m = arith.muli %x, %gamma : i64
    %y = arith.xori %m, %max : i64
    %k = arith.muli %gamma, %c3 : i64
    %z = arith.addi %y, %k : i64
    linalg.yield %z : i64
  }
  return
}

// -----

// A generic yielding a constant fills its output with the exact i64.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @yield_int64_constant
// CHECK: nova.fill 9223372036854775807 outs(%{{.*}} : memref<4x8xi64, #nova.memory_space<sram>>)
func.func @yield_int64_constant(%o: memref<4x8xi64, #nova.memory_space<sram>>) {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%o : memref<4x8xi64, #nova.memory_space<sram>>) {
  ^bb0(%out: i64):
    %max = arith.constant 9223372036854775807 : i64
    linalg.yield %max : i64
  }
  return
}

// -----

// An unsigned compare of values that cannot be negative (a loop index and a
// window bound built from it, as adaptive pooling's are) compares the same
// signed, which the vector unit has.
// CHECK-LABEL: func.func @unsigned_compare_of_indices
// CHECK: nova.iota
// CHECK: nova.elementwise <cmp_lt>
// CHECK: nova.elementwise <cmp_le>
// CHECK-NOT: linalg.generic
func.func @unsigned_compare_of_indices(%o: memref<8xi1, #nova.memory_space<sram>>) {
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%o : memref<8xi1, #nova.memory_space<sram>>) {
  ^bb0(%out: i1):
    %i = linalg.index 0 : index
    %w = arith.muli %i, %c2 : index
    %e = arith.addi %w, %c3 : index
    %lt = arith.cmpi ult, %i, %c3 : index
    %le = arith.cmpi ule, %w, %e : index
    %p = arith.andi %lt, %le : i1
    linalg.yield %p : i1
  }
  return
}

// -----

// Integer ops on i1 (bools): the unit holds 0/1 and orders them unsigned,
// arith's signed view is 0/-1. Signed compares flip, mul is and, abs is the
// value, add is xor.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @bool_integer_ops
// CHECK: nova.elementwise <and> {{.*}} outs(%[[AND:.*]] : memref<4x8xi1
// The abs of a bool is the bool: xor reads the and's result.
// CHECK-NOT: nova.elementwise <abs>
// CHECK: nova.elementwise <xor> ins(%[[AND]],
// CHECK: nova.elementwise <cmp_gt>
// CHECK: nova.elementwise <cmp_lt>
// CHECK: nova.elementwise <min>
// CHECK-NOT: linalg.generic
func.func @bool_integer_ops(%a: memref<4x8xi1, #nova.memory_space<sram>>, %b: memref<4x8xi1, #nova.memory_space<sram>>, %o: memref<4x8xi1, #nova.memory_space<sram>>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<4x8xi1, #nova.memory_space<sram>>, memref<4x8xi1, #nova.memory_space<sram>>)
      outs(%o : memref<4x8xi1, #nova.memory_space<sram>>) {
  ^bb0(%x: i1, %y: i1, %out: i1):
    %m = arith.muli %x, %y : i1
    %abs = math.absi %m : i1
    %s = arith.addi %abs, %y : i1
    %slt = arith.cmpi slt, %s, %x : i1
    %ult = arith.cmpi ult, %slt, %y : i1
    %max = arith.maxsi %ult, %x : i1
    linalg.yield %max : i1
  }
  return
}
