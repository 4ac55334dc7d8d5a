// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s --mlir-print-op-generic | nova-opt | FileCheck %s

// CHECK-LABEL: func.func @scalar_instructions
func.func @scalar_instructions() {
  // CHECK: %[[A:.*]] = nova_isa.li 4096 on scalar
  %a = nova_isa.li 4096 on scalar
  // CHECK: %[[B:.*]] = nova_isa.li -8 on scalar
  %b = nova_isa.li -8 on scalar
  // CHECK: nova_isa.salu add %[[A]], %[[B]] on scalar
  %0 = nova_isa.salu add %a, %b on scalar
  // CHECK: nova_isa.salu sub %[[A]], %[[B]] on scalar
  %1 = nova_isa.salu sub %a, %b on scalar
  // CHECK: nova_isa.salu mul
  %2 = nova_isa.salu mul %a, %b on scalar
  // CHECK: nova_isa.salu div
  %3 = nova_isa.salu div %a, %b on scalar
  // CHECK: nova_isa.salu rem
  %4 = nova_isa.salu rem %a, %b on scalar
  // CHECK: nova_isa.salu min
  %5 = nova_isa.salu min %a, %b on scalar
  // CHECK: nova_isa.salu max
  %6 = nova_isa.salu max %a, %b on scalar
  // CHECK: nova_isa.salu eq
  %7 = nova_isa.salu eq %a, %b on scalar
  // CHECK: nova_isa.salu ne
  %8 = nova_isa.salu ne %a, %b on scalar
  // CHECK: nova_isa.salu lt
  %9 = nova_isa.salu lt %a, %b on scalar
  // CHECK: nova_isa.salu le
  %10 = nova_isa.salu le %a, %b on scalar
  // CHECK: nova_isa.chip_id on scalar
  %id = nova_isa.chip_id on scalar
  // CHECK: nova_isa.sem_signal [0, 63] on scalar
  nova_isa.sem_signal [0, 63] on scalar
  // CHECK: nova_isa.sem_wait [1] on scalar
  nova_isa.sem_wait [1] on scalar
  // CHECK: nova_isa.halt on scalar
  nova_isa.halt on scalar
  return
}

// CHECK-LABEL: func.func @nop_on_every_engine
func.func @nop_on_every_engine() {
  // CHECK: nova_isa.nop on matrix{{$}}
  nova_isa.nop on matrix
  // CHECK: nova_isa.nop on vector wait [0] signal [1]
  nova_isa.nop on vector wait [0] signal [1]
  // CHECK: nova_isa.nop on scalar
  nova_isa.nop on scalar
  // CHECK: nova_isa.nop on dma signal [2, 3]
  nova_isa.nop on dma signal [2, 3]
  // A nop on dma queue 3 (ISA version 4); queue 0 prints as before.
  // CHECK: nova_isa.nop queue 3 on dma wait [0] signal [5]
  nova_isa.nop queue 3 on dma wait [0] signal [5]
  // CHECK: nova_isa.nop queue 0 on dma{{$}}
  nova_isa.nop queue 0 on dma
  // CHECK: nova_isa.nop on collective wait [4]
  nova_isa.nop on collective wait [4]
  return
}

// CHECK-LABEL: func.func @loops
func.func @loops(%n: index) {
  // CHECK: nova_isa.loop %[[I:.*]] = 0 to %{{.*}} step 1 on scalar {
  nova_isa.loop %i = 0 to %n step 1 on scalar {
    // CHECK: nova_isa.loop %[[J:.*]] = %[[I]] to 128 step %{{.*}} on scalar {
    nova_isa.loop %j = %i to 128 step %n on scalar {
      // CHECK: nova_isa.salu add %[[I]], %[[J]] on scalar
      %s = nova_isa.salu add %i, %j on scalar
    }
    // CHECK: nova_isa.loop %{{.*}} = 4 to 0 step 2 on scalar {
    // CHECK-NEXT: }
    nova_isa.loop %k = 4 to 0 step 2 on scalar {
    }
  }
  return
}

// CHECK-LABEL: func.func @branches
func.func @branches(%c: index) {
  // CHECK: nova_isa.if %{{.*}} on scalar {
  // CHECK-NEXT: nova_isa.sem_signal [0] on scalar
  // CHECK-NEXT: } else {
  // CHECK-NEXT: nova_isa.sem_signal [1] on scalar
  // CHECK-NEXT: }
  nova_isa.if %c on scalar {
    nova_isa.sem_signal [0] on scalar
  } else {
    nova_isa.sem_signal [1] on scalar
  }
  // CHECK: nova_isa.if %{{.*}} on scalar {
  // CHECK-NEXT: nova_isa.halt on scalar
  // CHECK-NEXT: }
  // CHECK-NOT: else
  nova_isa.if %c on scalar {
    nova_isa.halt on scalar
  }
  return
}

// CHECK-LABEL: func.func @dma
func.func @dma(%src: index, %dst: index, %peer: index) {
  // CHECK: nova_isa.dma_copy %{{.*}} : #nova_isa.tile<hbm, f32, [64, 128], [512, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> queue 1 on dma wait [0] signal [1]
  nova_isa.dma_copy %src : #nova_isa.tile<hbm, f32, [64, 128], [512, 1]>
      -> %dst : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> queue 1 on dma wait [0] signal [1]
  // CHECK: nova_isa.dma_copy %{{.*}} : #nova_isa.tile<sram, bf16, [4, 8, 2, 2], [32, 4, 2, 1]> -> %{{.*}} : #nova_isa.tile<hbm, bf16, [4, 8, 2, 2], [32, 4, 2, 1]> queue 0 peer %{{.*}} on dma{{$}}
  nova_isa.dma_copy %src : #nova_isa.tile<sram, bf16, [4, 8, 2, 2], [32, 4, 2, 1]>
      -> %dst : #nova_isa.tile<hbm, bf16, [4, 8, 2, 2], [32, 4, 2, 1]> queue 0 peer %peer on dma
  // A zero stride broadcasts on reads.
  // CHECK: nova_isa.dma_copy %{{.*}} : #nova_isa.tile<hbm, f16, [16, 32], [0, 1]> -> %{{.*}} : #nova_isa.tile<sram, f16, [16, 32], [32, 1]> queue 255
  nova_isa.dma_copy %src : #nova_isa.tile<hbm, f16, [16, 32], [0, 1]>
      -> %dst : #nova_isa.tile<sram, f16, [16, 32], [32, 1]> queue 255 on dma
  return
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: index, %b: index, %c: index) {
  // CHECK: nova_isa.matmul %{{.*}} : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, %{{.*}} : #nova_isa.tile<sram, bf16, [128, 32], [32, 1]> -> %{{.*}} : #nova_isa.tile<acc, f32, [64, 32], [32, 1]> on matrix{{$}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>,
                  %b : #nova_isa.tile<sram, bf16, [128, 32], [32, 1]>
      -> %c : #nova_isa.tile<acc, f32, [64, 32], [32, 1]> on matrix
  // CHECK: nova_isa.matmul {{.*}} -> %{{.*}} : #nova_isa.tile<acc, f32, [64, 32], [32, 1]> accumulate on matrix wait [1, 2] signal [3]
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>,
                  %b : #nova_isa.tile<sram, bf16, [128, 32], [32, 1]>
      -> %c : #nova_isa.tile<acc, f32, [64, 32], [32, 1]> accumulate on matrix wait [1, 2] signal [3]
  return
}

// CHECK-LABEL: func.func @vector
func.func @vector(%x: index, %y: index, %z: index) {
  // CHECK: nova_isa.vunary exp %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector{{$}}
  nova_isa.vunary exp %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vunary relu {{.*}} on vector wait [0]
  nova_isa.vunary relu %x : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<acc, f32, [64, 128], [128, 1]> on vector wait [0]
  // CHECK: nova_isa.vbinary add %{{.*}} : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [1, 128], [128, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  nova_isa.vbinary add %x : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>,
                       %z : #nova_isa.tile<sram, f32, [1, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vbinary cmp_ge
  nova_isa.vbinary cmp_ge %x : #nova_isa.tile<sram, bf16, [64, 1], [1, 1]>,
                          %z : #nova_isa.tile<sram, bf16, [1, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vscalar mul %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, 5.000000e-01 -> %{{.*}} on vector signal [7]
  nova_isa.vscalar mul %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, 0.5
      -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector signal [7]
  // CHECK: nova_isa.vselect %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [1, 1], [1, 1]> -> %{{.*}} on vector
  nova_isa.vselect %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>,
                   %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>,
                   %z : #nova_isa.tile<sram, f32, [1, 1], [1, 1]>
      -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vreduce max %{{.*}} -> %{{.*}} : #nova_isa.tile<sram, f32, [64, 1], [1, 1]> axis 1 on vector
  nova_isa.vreduce max %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, f32, [64, 1], [1, 1]> axis 1 on vector
  // CHECK: nova_isa.vreduce avg {{.*}} axis 0 on vector
  nova_isa.vreduce avg %x : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, f32, [1, 128], [128, 1]> axis 0 on vector
  // CHECK: nova_isa.vtranspose %{{.*}} -> %{{.*}} : #nova_isa.tile<sram, f32, [128, 64], [64, 1]> perm [1, 0] on vector
  nova_isa.vtranspose %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, f32, [128, 64], [64, 1]> perm [1, 0] on vector
  // CHECK: nova_isa.vfill 0.000000e+00 -> %{{.*}} : #nova_isa.tile<acc, f32, [64, 128], [128, 1]> on vector
  nova_isa.vfill 0.0 -> %y : #nova_isa.tile<acc, f32, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vcopy %{{.*}} : #nova_isa.tile<acc, f32, [64, 128], [128, 1]> -> %{{.*}} : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
  nova_isa.vcopy %x : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
  return
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: index, %y: index, %p: index) {
  // CHECK: nova_isa.all_reduce sum %{{.*}} : #nova_isa.tile<hbm, f32, [1024], [1]> -> %{{.*}} : #nova_isa.tile<hbm, f32, [1024], [1]> groups {{\[}}[0, 1], [2, 3]] on collective
  nova_isa.all_reduce sum %x : #nova_isa.tile<hbm, f32, [1024], [1]>
      -> %y : #nova_isa.tile<hbm, f32, [1024], [1]> groups [[0, 1], [2, 3]] on collective
  // CHECK: nova_isa.all_gather {{.*}} dim 0 groups {{\[}}[0, 1, 2, 3]] on collective wait [0]
  nova_isa.all_gather %x : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]>
      -> %y : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]> dim 0 groups [[0, 1, 2, 3]] on collective wait [0]
  // CHECK: nova_isa.reduce_scatter max {{.*}} dim 1 groups {{\[}}[0, 1]] on collective
  nova_isa.reduce_scatter max %x : #nova_isa.tile<sram, f32, [64, 64], [64, 1]>
      -> %y : #nova_isa.tile<sram, f32, [64, 32], [32, 1]> dim 1 groups [[0, 1]] on collective
  // CHECK: nova_isa.all_to_all {{.*}} split_dim 0 concat_dim 1 groups {{\[}}[0, 1]] on collective
  nova_isa.all_to_all %x : #nova_isa.tile<hbm, f32, [8, 16], [16, 1]>
      -> %y : #nova_isa.tile<hbm, f32, [4, 32], [32, 1]> split_dim 0 concat_dim 1 groups [[0, 1]] on collective
  // CHECK: nova_isa.send %{{.*}} : #nova_isa.tile<hbm, f32, [4, 128], [128, 1]> to %{{.*}} channel 3 on collective signal [3]
  nova_isa.send %x : #nova_isa.tile<hbm, f32, [4, 128], [128, 1]> to %p channel 3 on collective signal [3]
  // CHECK: nova_isa.recv %{{.*}} : #nova_isa.tile<hbm, f32, [4, 128], [128, 1]> from %{{.*}} channel 3 on collective
  nova_isa.recv %y : #nova_isa.tile<hbm, f32, [4, 128], [128, 1]> from %p channel 3 on collective
  // CHECK: nova_isa.barrier groups {{\[}}[0], [1], [2], [3]] on collective signal [5]
  nova_isa.barrier groups [[0], [1], [2], [3]] on collective signal [5]
  return
}

// CHECK-LABEL: func.func @integer_and_indexed_instructions
// CHECK: nova_isa.viota -> %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> axis 1 on vector
// CHECK: nova_isa.vfill 0 value(%{{.*}}) -> %{{.*}} : #nova_isa.tile<sram, i64, [1, 1], [1, 1]> on vector
// CHECK: nova_isa.vscalar cmp_lt %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]>, 3 -> %{{.*}} : #nova_isa.tile<sram, i1, [4, 8], [8, 1]> on vector
// CHECK: nova_isa.vassert %{{.*}} : #nova_isa.tile<sram, i1, [4, 8], [8, 1]> "in range" on vector
// CHECK: nova_isa.dma_gather %{{.*}} : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]>, %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> queue 1 on dma
// CHECK: nova_isa.dma_scatter %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %{{.*}} : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]> queue 2 accumulate on dma
// CHECK: nova_isa.dma_scatter %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %{{.*}} : #nova_isa.tile<sram, i32, [4, 8], [8, 1]> -> %{{.*}} : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]> queue 0 on dma
func.func @integer_and_indexed_instructions(%a: index, %b: index, %c: index, %d: index) {
  nova_isa.viota -> %a : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> axis 1 on vector
  nova_isa.vfill 0 value(%b) -> %c : #nova_isa.tile<sram, i64, [1, 1], [1, 1]> on vector
  nova_isa.vscalar cmp_lt %a : #nova_isa.tile<sram, i64, [4, 8], [8, 1]>, 3 -> %d : #nova_isa.tile<sram, i1, [4, 8], [8, 1]> on vector
  nova_isa.vassert %d : #nova_isa.tile<sram, i1, [4, 8], [8, 1]> "in range" on vector
  nova_isa.dma_gather %b : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]>, %a : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %c : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> queue 1 on dma
  nova_isa.dma_scatter %c : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %a : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %b : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]> queue 2 accumulate on dma
  nova_isa.dma_scatter %c : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %a : #nova_isa.tile<sram, i32, [4, 8], [8, 1]> -> %b : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]> queue 0 on dma
  return
}

// Integer immediates keep every bit of their i64.
// CHECK-LABEL: func.func @exact_integer_immediates
// CHECK: nova_isa.vfill -7046029254386353131 -> %{{.*}} : #nova_isa.tile<sram, i64, [8], [1]> on vector
// CHECK: nova_isa.vscalar mul %{{.*}} : #nova_isa.tile<sram, i64, [8], [1]>, 9223372036854775807 -> %{{.*}} : #nova_isa.tile<sram, i64, [8], [1]> on vector
// CHECK: nova_isa.vfill 0xFFF0000000000000 -> %{{.*}} : #nova_isa.tile<sram, f32, [8], [1]> on vector
func.func @exact_integer_immediates(%a: index, %b: index) {
  nova_isa.vfill -7046029254386353131 -> %a : #nova_isa.tile<sram, i64, [8], [1]> on vector
  nova_isa.vscalar mul %a : #nova_isa.tile<sram, i64, [8], [1]>, 9223372036854775807 -> %a : #nova_isa.tile<sram, i64, [8], [1]> on vector
  nova_isa.vfill 0xFFF0000000000000 -> %b : #nova_isa.tile<sram, f32, [8], [1]> on vector
  return
}

// VFUSED (ISA version 5): tiles, a per-row operand and immediates.
// CHECK-LABEL: func.func @vfused
func.func @vfused(%x: index, %a: index, %b: index, %y: index) {
  // CHECK: nova_isa.vfused mul, add %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [1, 1], [1, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  nova_isa.vfused mul, add %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>,
      %a : #nova_isa.tile<sram, f32, [1, 1], [1, 1]>, %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vfused sub, mul %{{.*}} : #nova_isa.tile<acc, bf16, [64, 128], [128, 1]>, %{{.*}} : #nova_isa.tile<sram, bf16, [64, 1], [1, 1]>, %{{.*}} : #nova_isa.tile<sram, bf16, [64, 1], [1, 1]> -> %{{.*}} : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector wait [1]
  nova_isa.vfused sub, mul %x : #nova_isa.tile<acc, bf16, [64, 128], [128, 1]>,
      %a : #nova_isa.tile<sram, bf16, [64, 1], [1, 1]>, %b : #nova_isa.tile<sram, bf16, [64, 1], [1, 1]>
      -> %y : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector wait [1]
  // CHECK: nova_isa.vfused div, max %{{.*}} : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>, 2.500000e-01, -1.000000e+00 -> %{{.*}} : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on vector
  nova_isa.vfused div, max %x : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>, 0.25, -1.0
      -> %y : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on vector
  return
}

// Float tiles of an elementwise instruction mix (ISA 2.4): read as f32, the
// f32 result rounded to the output's type; VFUSED rounds T to X's type.
// CHECK-LABEL: func.func @float_types_mix
func.func @float_types_mix(%x: index, %a: index, %y: index) {
  // CHECK: nova_isa.vunary exp %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %{{.*}} : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
  nova_isa.vunary exp %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vbinary add %{{.*}} : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>, %{{.*}} : #nova_isa.tile<sram, bf16, [1, 128], [128, 1]> -> %{{.*}} : #nova_isa.tile<sram, f16, [64, 128], [128, 1]> on vector
  nova_isa.vbinary add %x : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>, %a : #nova_isa.tile<sram, bf16, [1, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, f16, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vscalar mul %{{.*}} : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, 5.000000e-01 -> %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  nova_isa.vscalar mul %x : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, 0.5
      -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vfused sub, mul %{{.*}} : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [64, 1], [1, 1]>, 2.000000e+00 -> %{{.*}} : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
  nova_isa.vfused sub, mul %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>,
      %a : #nova_isa.tile<sram, f32, [64, 1], [1, 1]>, 2.0
      -> %y : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
  // CHECK: nova_isa.vreduce sum %{{.*}} : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [1, 128], [128, 1]> axis 0 on vector
  nova_isa.vreduce sum %x : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>
      -> %y : #nova_isa.tile<sram, f32, [1, 128], [128, 1]> axis 0 on vector
  return
}
