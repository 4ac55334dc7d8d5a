// RUN: nova-opt %s -split-input-file -verify-diagnostics

func.func @tile_rank_zero(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{tile rank must be 1 to 4, got 0}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<sram, f32, [], []> on vector
  return
}

// -----

func.func @tile_rank_five(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{tile rank must be 1 to 4, got 5}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<sram, f32, [1, 1, 1, 1, 1], [1, 1, 1, 1, 1]> on vector
  return
}

// -----

func.func @tile_stride_count(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{tile has 2 sizes but 1 strides}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<sram, f32, [4, 4], [1]> on vector
  return
}

// -----

func.func @tile_zero_size(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{tile sizes must be positive, got 0 in dimension 1}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<sram, f32, [4, 0], [4, 1]> on vector
  return
}

// -----

func.func @tile_negative_stride(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{tile strides must be non-negative, got -4 in dimension 0}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<sram, f32, [4, 4], [-4, 1]> on vector
  return
}

// -----

func.func @tile_element_type(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{tile element type must be f32, bf16, f16, i64, i32, i8 or i1, got 'i16'}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<sram, i16, [4], [1]> on vector
  return
}

// -----

func.func @tile_memory_space(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{unknown memory space 'l2', expected hbm, sram or acc}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<l2, f32, [4], [1]> on vector
  return
}

// -----

func.func @semaphore_out_of_range(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'wait' failed to satisfy constraint: i64 dense array attribute whose values are semaphore ids in [0, 63]}}
  nova_isa.nop on vector wait [64]
  return
}

// -----

func.func @semaphore_negative(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'signal' failed to satisfy constraint: i64 dense array attribute whose values are semaphore ids in [0, 63]}}
  nova_isa.nop on vector signal [-1]
  return
}

// -----

func.func @semaphore_unsorted(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{should be in increasing order}}
  nova_isa.nop on dma signal [3, 1]
  return
}

// -----

func.func @semaphore_duplicate(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{should be in increasing order}}
  nova_isa.sem_wait [2, 2] on scalar
  return
}

// -----

func.func @sem_wait_empty(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.sem_wait' op needs at least one semaphore}}
  nova_isa.sem_wait [] on scalar
  return
}

// -----

func.func @sem_signal_empty(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.sem_signal' op needs at least one semaphore}}
  nova_isa.sem_signal [] on scalar
  return
}

// -----

func.func @engine_matmul_on_vector(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.matmul' op must run on matrix, got vector}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [4, 8], [8, 1]>, %b : #nova_isa.tile<sram, bf16, [8, 4], [4, 1]> -> %c : #nova_isa.tile<acc, f32, [4, 4], [4, 1]> on vector
  return
}

// -----

func.func @engine_li_on_vector(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.li' op must run on scalar, got vector}}
  %r = nova_isa.li 1 on vector
  return
}

// -----

func.func @engine_dma_on_matrix(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.dma_copy' op must run on dma, got matrix}}
  nova_isa.dma_copy %a : #nova_isa.tile<hbm, f32, [4], [1]> -> %b : #nova_isa.tile<sram, f32, [4], [1]> queue 0 on matrix
  return
}

// -----

func.func @engine_all_reduce_on_dma(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op must run on collective, got dma}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [4], [1]> -> %b : #nova_isa.tile<hbm, f32, [4], [1]> groups [[0, 1]] on dma
  return
}

// -----

func.func @engine_vunary_on_scalar(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vunary' op must run on vector, got scalar}}
  nova_isa.vunary exp %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on scalar
  return
}

// -----

func.func @engine_unknown(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{unknown engine 'gpsimd'}}
  nova_isa.halt on gpsimd
  return
}

// -----

func.func @loop_step_zero(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.loop' op step must be positive, got 0}}
  nova_isa.loop %i = 0 to 8 step 0 on scalar {
  }
  return
}

// -----

func.func @loop_step_negative(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.loop' op step must be positive, got -1}}
  nova_isa.loop %i = 8 to 0 step -1 on scalar {
  }
  return
}

// -----

func.func @loop_bound_reg_and_imm(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.loop' op lower bound must be exactly one of a register and an immediate}}
  "nova_isa.loop"(%a, %b, %c) <{engine = #nova_isa.engine<scalar>, lower_imm = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> ({
  ^bb0(%i: index):
    "nova_isa.end"() : () -> ()
  }) : (index, index, index) -> ()
  return
}

// -----

func.func @loop_bound_missing(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.loop' op upper bound must be exactly one of a register and an immediate}}
  "nova_isa.loop"(%a, %c) <{engine = #nova_isa.engine<scalar>, operandSegmentSizes = array<i32: 1, 0, 1>}> ({
  ^bb0(%i: index):
    "nova_isa.end"() : () -> ()
  }) : (index, index) -> ()
  return
}

// -----

func.func @loop_body_arguments(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.loop' op body must take exactly one index argument, the induction variable}}
  "nova_isa.loop"() <{engine = #nova_isa.engine<scalar>, lower_imm = 0 : i64, upper_imm = 4 : i64, step_imm = 1 : i64, operandSegmentSizes = array<i32: 0, 0, 0>}> ({
    "nova_isa.end"() : () -> ()
  }) : () -> ()
  return
}

// -----

func.func @loop_too_deep(%a: index, %b: index, %c: index, %d: index) {
  nova_isa.loop %i0 = 0 to 2 step 1 on scalar {
    nova_isa.loop %i1 = 0 to 2 step 1 on scalar {
      nova_isa.loop %i2 = 0 to 2 step 1 on scalar {
        nova_isa.loop %i3 = 0 to 2 step 1 on scalar {
          nova_isa.loop %i4 = 0 to 2 step 1 on scalar {
            nova_isa.loop %i5 = 0 to 2 step 1 on scalar {
              nova_isa.loop %i6 = 0 to 2 step 1 on scalar {
                nova_isa.loop %i7 = 0 to 2 step 1 on scalar {
                  // expected-error @+1 {{'nova_isa.loop' op loops nest 9 deep, the loop stack holds at most 8}}
                  nova_isa.loop %i8 = 0 to 2 step 1 on scalar {
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return
}

// -----

func.func @end_outside_region(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.end' op expects parent op to be one of 'nova_isa.loop, nova_isa.if'}}
  nova_isa.end
  return
}

// -----

func.func @if_region_arguments(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.if' op region #0 should have no arguments}}
  "nova_isa.if"(%a) <{engine = #nova_isa.engine<scalar>}> ({
  ^bb0(%x: index):
    "nova_isa.end"() : () -> ()
  }, {
  }) : (index) -> ()
  return
}

// -----

func.func @dma_source_in_acc(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.dma_copy' op source must live in hbm or sram, got acc}}
  nova_isa.dma_copy %a : #nova_isa.tile<acc, f32, [4, 4], [4, 1]> -> %b : #nova_isa.tile<sram, f32, [4, 4], [4, 1]> queue 0 on dma
  return
}

// -----

func.func @dma_shape_mismatch(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.dma_copy' op source and target shapes must match, got 4x4 and 16}}
  nova_isa.dma_copy %a : #nova_isa.tile<hbm, f32, [4, 4], [4, 1]> -> %b : #nova_isa.tile<sram, f32, [16], [1]> queue 0 on dma
  return
}

// -----

func.func @dma_element_type_mismatch(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.dma_copy' op source and target element types must match, got 'f32' and 'bf16'}}
  nova_isa.dma_copy %a : #nova_isa.tile<hbm, f32, [4, 4], [4, 1]> -> %b : #nova_isa.tile<sram, bf16, [4, 4], [4, 1]> queue 0 on dma
  return
}

// -----

func.func @dma_peer_writes_sram(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.dma_copy' op a dma to a peer chip must write to hbm, got sram}}
  nova_isa.dma_copy %a : #nova_isa.tile<hbm, f32, [4, 4], [4, 1]> -> %b : #nova_isa.tile<sram, f32, [4, 4], [4, 1]> queue 0 peer %c on dma
  return
}

// -----

func.func @dma_output_zero_stride(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.dma_copy' op target has stride 0 in dimension 0 of size 4, an output must not repeat elements}}
  nova_isa.dma_copy %a : #nova_isa.tile<hbm, f32, [4, 4], [4, 1]> -> %b : #nova_isa.tile<sram, f32, [4, 4], [0, 1]> queue 0 on dma
  return
}

// -----

func.func @dma_queue_too_large(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'queue' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative whose maximum value is 255}}
  nova_isa.dma_copy %a : #nova_isa.tile<hbm, f32, [4, 4], [4, 1]> -> %b : #nova_isa.tile<sram, f32, [4, 4], [4, 1]> queue 256 on dma
  return
}

// -----

func.func @matmul_rank(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.matmul' op lhs must be 2-D, got rank 3}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128, 1], [128, 1, 1]>, %b : #nova_isa.tile<sram, bf16, [128, 32], [32, 1]> -> %c : #nova_isa.tile<acc, f32, [64, 32], [32, 1]> on matrix
  return
}

// -----

func.func @matmul_contraction_mismatch(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.matmul' op lhs columns (128) must equal rhs rows (64)}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, bf16, [64, 32], [32, 1]> -> %c : #nova_isa.tile<acc, f32, [64, 32], [32, 1]> on matrix
  return
}

// -----

func.func @matmul_acc_shape(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.matmul' op acc shape must be 64x32, got 32x64}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, bf16, [128, 32], [32, 1]> -> %c : #nova_isa.tile<acc, f32, [32, 64], [64, 1]> on matrix
  return
}

// -----

func.func @matmul_operand_types(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.matmul' op lhs and rhs element types must match, got 'bf16' and 'f16'}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, f16, [128, 32], [32, 1]> -> %c : #nova_isa.tile<acc, f32, [64, 32], [32, 1]> on matrix
  return
}

// -----

func.func @matmul_acc_not_f32(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.matmul' op acc element type must be f32, got 'bf16'}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, bf16, [128, 32], [32, 1]> -> %c : #nova_isa.tile<acc, bf16, [64, 32], [32, 1]> on matrix
  return
}

// -----

func.func @matmul_lhs_in_hbm(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.matmul' op lhs must live in sram, got hbm}}
  nova_isa.matmul %a : #nova_isa.tile<hbm, bf16, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, bf16, [128, 32], [32, 1]> -> %c : #nova_isa.tile<acc, f32, [64, 32], [32, 1]> on matrix
  return
}

// -----

func.func @matmul_acc_in_sram(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.matmul' op acc must live in acc, got sram}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, bf16, [128, 32], [32, 1]> -> %c : #nova_isa.tile<sram, f32, [64, 32], [32, 1]> on matrix
  return
}

// -----

func.func @vunary_binary_kind(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vunary' op kind must be unary, got add}}
  nova_isa.vunary add %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vunary_unknown_kind(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{unknown elementwise kind 'gelu'}}
  nova_isa.vunary gelu %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vunary_output_in_hbm(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vunary' op output must live in sram or acc, got hbm}}
  nova_isa.vunary exp %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<hbm, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vunary_element_type(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vunary' op input and output element types must match, got 'i32' and 'f32'}}
  nova_isa.vunary neg %a : #nova_isa.tile<sram, i32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vbinary_unary_kind(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vbinary' op kind must be binary, got exp}}
  nova_isa.vbinary exp %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %c : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vbinary_select_kind(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vbinary' op kind must be binary, got select}}
  nova_isa.vbinary select %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %c : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vbinary_broadcast_rank(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vbinary' op rhs has rank 1 but the output has rank 2}}
  nova_isa.vbinary add %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, f32, [128], [1]> -> %c : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vbinary_broadcast_size(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vbinary' op lhs of shape 64x2 does not broadcast to the output shape 64x128}}
  nova_isa.vbinary add %a : #nova_isa.tile<sram, f32, [64, 2], [2, 1]>, %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %c : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vscalar_unary_kind(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vscalar' op kind must be binary, got neg}}
  nova_isa.vscalar neg %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, 1.0 -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vselect_broadcast(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vselect' op false value of shape 2x128 does not broadcast to the output shape 64x128}}
  nova_isa.vselect %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %c : #nova_isa.tile<sram, f32, [2, 128], [128, 1]> -> %d : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
  return
}

// -----

func.func @vselect_output_zero_stride(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vselect' op output has stride 0 in dimension 1 of size 128, an output must not repeat elements}}
  nova_isa.vselect %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, %c : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %d : #nova_isa.tile<sram, f32, [64, 128], [128, 0]> on vector
  return
}

// -----

func.func @vreduce_axis(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vreduce' op axis 2 is out of range for rank 2}}
  nova_isa.vreduce sum %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> axis 2 on vector
  return
}

// -----

func.func @vreduce_output_shape(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vreduce' op output shape must be 64x1, got 64}}
  nova_isa.vreduce sum %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64], [1]> axis 1 on vector
  return
}

// -----

func.func @vreduce_element_type(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vreduce' op input and output element types must match, got 'i32' and 'f32'}}
  nova_isa.vreduce sum %a : #nova_isa.tile<sram, i32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 1], [1, 1]> axis 1 on vector
  return
}

// -----

func.func @vtranspose_perm_length(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vtranspose' op perm has 3 entries for an input of rank 2}}
  nova_isa.vtranspose %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> perm [1, 0, 2] on vector
  return
}

// -----

func.func @vtranspose_not_permutation(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vtranspose' op perm is not a permutation of 0..1}}
  nova_isa.vtranspose %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> perm [1, 1] on vector
  return
}

// -----

func.func @vtranspose_output_shape(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vtranspose' op output shape must be 128x64, got 64x128}}
  nova_isa.vtranspose %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> perm [1, 0] on vector
  return
}

// -----

func.func @vfill_output_in_hbm(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vfill' op output must live in sram or acc, got hbm}}
  nova_isa.vfill 1.0 -> %a : #nova_isa.tile<hbm, f32, [4, 4], [4, 1]> on vector
  return
}

// -----

func.func @vcopy_shape(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vcopy' op output shape must be 64x128, got 128x64}}
  nova_isa.vcopy %a : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> -> %b : #nova_isa.tile<sram, bf16, [128, 64], [64, 1]> on vector
  return
}

// -----

func.func @vcopy_input_in_hbm(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.vcopy' op input must live in sram or acc, got hbm}}
  nova_isa.vcopy %a : #nova_isa.tile<hbm, f32, [4, 4], [4, 1]> -> %b : #nova_isa.tile<sram, f32, [4, 4], [4, 1]> on vector
  return
}

// -----

func.func @all_reduce_input_in_acc(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op input must live in hbm or sram, got acc}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<acc, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [8], [1]> groups [[0, 1]] on collective
  return
}

// -----

func.func @all_reduce_element_type(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op input and output element types must match, got 'f32' and 'bf16'}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, bf16, [8], [1]> groups [[0, 1]] on collective
  return
}

// -----

func.func @all_reduce_shape(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op output shape must be 8, got 4}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [4], [1]> groups [[0, 1]] on collective
  return
}

// -----

func.func @groups_none(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op needs at least one replica group}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [8], [1]> groups [] on collective
  return
}

// -----

func.func @groups_empty_group(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op replica group 1 is empty}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [8], [1]> groups [[0, 1], []] on collective
  return
}

// -----

func.func @groups_unequal(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op replica groups must have one size, group 1 has 1 chips, group 0 has 2}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [8], [1]> groups [[0, 1], [2]] on collective
  return
}

// -----

func.func @groups_negative(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op chip id -1 is negative}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [8], [1]> groups [[0, -1]] on collective
  return
}

// -----

func.func @groups_duplicate(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op chip 1 appears in more than one replica group}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [8], [1]> groups [[0, 1], [1, 2]] on collective
  return
}

// -----

func.func @groups_missing_chip(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_reduce' op chip 2 is in no replica group}}
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [8], [1]> groups [[0, 3], [1, 4]] on collective
  return
}

// -----

func.func @all_gather_dim(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_gather' op dim 2 is out of range for rank 2}}
  nova_isa.all_gather %a : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> -> %b : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> dim 2 groups [[0, 1]] on collective
  return
}

// -----

func.func @all_gather_shape(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_gather' op output shape must be 32x64, got 16x128}}
  nova_isa.all_gather %a : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> -> %b : #nova_isa.tile<hbm, f32, [16, 128], [128, 1]> dim 0 groups [[0, 1]] on collective
  return
}

// -----

func.func @reduce_scatter_split(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.reduce_scatter' op dim 0 of size 16 does not split evenly over groups of 3}}
  nova_isa.reduce_scatter sum %a : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> -> %b : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> dim 0 groups [[0, 1, 2]] on collective
  return
}

// -----

func.func @reduce_scatter_shape(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.reduce_scatter' op output shape must be 8x64, got 16x32}}
  nova_isa.reduce_scatter sum %a : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> -> %b : #nova_isa.tile<hbm, f32, [16, 32], [32, 1]> dim 0 groups [[0, 1]] on collective
  return
}

// -----

func.func @all_to_all_concat_dim(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_to_all' op concat_dim 3 is out of range for rank 2}}
  nova_isa.all_to_all %a : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> -> %b : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> split_dim 0 concat_dim 3 groups [[0, 1]] on collective
  return
}

// -----

func.func @all_to_all_shape(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.all_to_all' op output shape must be 8x128, got 16x64}}
  nova_isa.all_to_all %a : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> -> %b : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> split_dim 0 concat_dim 1 groups [[0, 1]] on collective
  return
}

// -----

func.func @send_input_in_acc(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.send' op input must live in hbm or sram, got acc}}
  nova_isa.send %a : #nova_isa.tile<acc, f32, [8], [1]> to %b channel 0 on collective
  return
}

// -----

func.func @send_channel_range(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'channel' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative whose maximum value is 255}}
  nova_isa.send %a : #nova_isa.tile<hbm, f32, [8], [1]> to %b channel 256 on collective
  return
}

// -----

func.func @recv_output_in_acc(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.recv' op output must live in hbm or sram, got acc}}
  nova_isa.recv %a : #nova_isa.tile<acc, f32, [8], [1]> from %b channel 0 on collective
  return
}

// -----

func.func @barrier_groups(%a: index, %b: index, %c: index, %d: index) {
  // expected-error @+1 {{'nova_isa.barrier' op chip 0 appears in more than one replica group}}
  nova_isa.barrier groups [[0], [0]] on collective
  return
}

// -----

func.func @gather_float_indices(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{indices must be an i64 or i32 tile, got 'f32'}}
  nova_isa.dma_gather %a : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]>, %b : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> -> %c : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> queue 0 on dma
  return
}

// -----

func.func @scatter_float_indices(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{indices must be an i64 or i32 tile, got 'f32'}}
  nova_isa.dma_scatter %a : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %b : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> -> %c : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]> queue 0 accumulate on dma
  return
}

// -----

func.func @scatter_indices_shape(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{indices shape must be}}
  nova_isa.dma_scatter %a : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %b : #nova_isa.tile<sram, i64, [4, 4], [4, 1]> -> %c : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]> queue 0 accumulate on dma
  return
}

// -----

func.func @scatter_element_types(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{element types must match}}
  nova_isa.dma_scatter %a : #nova_isa.tile<sram, bf16, [4, 8], [8, 1]>, %b : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %c : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]> queue 0 accumulate on dma
  return
}

// -----

func.func @viota_axis(%a: index) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  nova_isa.viota -> %a : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> axis 2 on vector
  return
}

// -----

func.func @argmax_float_output(%a: index, %b: index) {
  // expected-error @+1 {{argmax/argmin write an i64 or i32 tile, got 'f32'}}
  nova_isa.vreduce argmax %a : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> -> %b : #nova_isa.tile<sram, f32, [4, 1], [1, 1]> axis 1 on vector
  return
}

// -----

func.func @integer_matmul(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{lhs and rhs must be float tiles, got 'i32'}}
  nova_isa.matmul %a : #nova_isa.tile<sram, i32, [4, 8], [8, 1]>, %b : #nova_isa.tile<sram, i32, [8, 8], [8, 1]> -> %c : #nova_isa.tile<acc, f32, [4, 8], [8, 1]> on matrix
  return
}

// -----

// vfill / vscalar immediates: an exact i64 for integer and i1 tiles (by the
// output for vfill, the input for vscalar), an f64 for float tiles.
func.func @vfill_float_on_int(%a: index) {
  // expected-error @+1 {{'nova_isa.vfill' op value must be an i64 integer for the 'i64' output tile, got 0.000000e+00 : f64}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<sram, i64, [8], [1]> on vector
  return
}

// -----

func.func @vfill_int_on_float(%a: index) {
  // expected-error @+1 {{'nova_isa.vfill' op value must be an f64 float for the 'bf16' output tile, got 0 : i64}}
  nova_isa.vfill 0 -> %a : #nova_isa.tile<sram, bf16, [8], [1]> on vector
  return
}

// -----

func.func @vscalar_float_on_int(%a: index) {
  // expected-error @+1 {{'nova_isa.vscalar' op scalar must be an i64 integer for the 'i32' input tile, got 3.000000e+00 : f64}}
  nova_isa.vscalar add %a : #nova_isa.tile<sram, i32, [8], [1]>, 3.0 -> %a : #nova_isa.tile<sram, i32, [8], [1]> on vector
  return
}

// -----

// An f32 comparison writing i1 keeps an f64 immediate (by the input's type).
func.func @vscalar_int_on_float_compare(%a: index, %b: index) {
  // expected-error @+1 {{'nova_isa.vscalar' op scalar must be an f64 float for the 'f32' input tile, got 3 : i64}}
  nova_isa.vscalar cmp_lt %a : #nova_isa.tile<sram, f32, [8], [1]>, 3 -> %b : #nova_isa.tile<sram, i1, [8], [1]> on vector
  return
}

// -----

func.func @nop_queue_on_vector() {
  // expected-error @+1 {{'nova_isa.nop' op names a dma queue but runs on vector; only a nop on dma has a queue}}
  nova_isa.nop queue 1 on vector
  return
}

// -----

func.func @nop_queue_too_large() {
  // expected-error @+1 {{'queue' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative whose maximum value is 255}}
  nova_isa.nop queue 256 on dma
  return
}

// -----

func.func @vfused_kind(%x: index, %y: index) {
  // expected-error @+1 {{'nova_isa.vfused' op kinds must be add, sub, mul, div, max or min, got pow}}
  nova_isa.vfused pow, add %x : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>, 2.0, 1.0
      -> %y : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on vector
  return
}

// -----

func.func @vfused_integer(%x: index, %y: index) {
  // expected-error @+1 {{'nova_isa.vfused' op takes float tiles, got 'i32'}}
  nova_isa.vfused mul, add %x : #nova_isa.tile<sram, i32, [8, 16], [16, 1]>, 2, 1
      -> %y : #nova_isa.tile<sram, i32, [8, 16], [16, 1]> on vector
  return
}

// -----

func.func @vfused_three_streams(%x: index, %a: index, %b: index, %y: index) {
  // expected-error @+1 {{'nova_isa.vfused' op reads 3 operands at the full rate, at most 2}}
  nova_isa.vfused mul, add %x : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>,
      %a : #nova_isa.tile<sram, f32, [1, 16], [16, 1]>, %b : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>
      -> %y : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on vector
  return
}

// -----

func.func @vfused_input_broadcast(%x: index, %y: index) {
  // expected-error @+1 {{'nova_isa.vfused' op input shape must be 8x16, got 1x16}}
  nova_isa.vfused mul, add %x : #nova_isa.tile<sram, f32, [1, 16], [16, 1]>, 2.0, 1.0
      -> %y : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on vector
  return
}

// -----

func.func @vfused_on_activation(%x: index, %y: index) {
  // expected-error @+1 {{'nova_isa.vfused' op}}
  nova_isa.vfused mul, add %x : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>, 2.0, 1.0
      -> %y : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on activation
  return
}

// -----

// VFUSED rounds T to X's type: A and B have it.
func.func @vfused_operand_types(%x: index, %a: index, %y: index) {
  // expected-error @+1 {{'nova_isa.vfused' op input and a element types must match, got 'f32' and 'bf16'}}
  nova_isa.vfused sub, mul %x : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>,
      %a : #nova_isa.tile<sram, bf16, [8, 1], [1, 1]>, 2.0
      -> %y : #nova_isa.tile<sram, bf16, [8, 16], [16, 1]> on vector
  return
}

// -----

func.func @vbinary_integer_and_float(%x: index, %a: index, %y: index) {
  // expected-error @+1 {{'nova_isa.vbinary' op lhs and rhs element types must match, got 'i32' and 'f32'}}
  nova_isa.vbinary add %x : #nova_isa.tile<sram, i32, [8, 16], [16, 1]>, %a : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>
      -> %y : #nova_isa.tile<sram, i32, [8, 16], [16, 1]> on vector
  return
}
