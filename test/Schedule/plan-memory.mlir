// RUN: nova-opt %s -split-input-file --nova-attach-target --nova-plan-memory -verify-diagnostics | FileCheck %s
// RUN: nova-opt %s -split-input-file --nova-attach-target --nova-plan-memory 2>/dev/null | nova-opt -split-input-file --nova-plan-memory 2>/dev/null | FileCheck %s --check-prefix=AGAIN

// Planning again keeps the roles and the addresses.
// AGAIN-LABEL: func.func @disjoint_lifetimes_share_space
// AGAIN-SAME: {nova.address = 0 : i64, nova.role = "input"}
// AGAIN-SAME: {nova.address = 256 : i64, nova.role = "output"}
// AGAIN: memref.alloc() {nova.address = 0 : i64}
// AGAIN: memref.alloc() {nova.address = 256 : i64}
// AGAIN: memref.alloc() {nova.address = 0 : i64}

// Outputs become out-params with no copy, arguments are laid out in order in
// hbm, and sram buffers whose lifetimes are disjoint share an address: %x is
// dead once %y is computed, so %z reuses it; %y overlaps both.

// CHECK-LABEL: func.func @disjoint_lifetimes_share_space
// CHECK-SAME: (%[[A:.*]]: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input"},
// CHECK-SAME: %[[OUT:.*]]: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64, nova.role = "output"})
// CHECK-SAME: attributes {nova.acc_peak = 0 : i64, nova.hbm_peak = 512 : i64, nova.sram_peak = 512 : i64}
// CHECK-NOT: #nova.memory_space<hbm>>
// CHECK: %[[X:.*]] = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
// CHECK: %[[Y:.*]] = memref.alloc() {nova.address = 256 : i64} : memref<64xf32, #nova.memory_space<sram>>
// CHECK: %[[Z:.*]] = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
// CHECK: nova.dma_start %[[Z]], %[[OUT]]
// CHECK: return{{$}}
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak 512 bytes of 25165824, acc peak 0 bytes of 2097152, hbm peak 512 bytes of 34359738368}}
func.func @disjoint_lifetimes_share_space(%a: memref<64xf32, #hbm>) -> memref<64xf32, #hbm> {
  %r = memref.alloc() {alignment = 64 : i64} : memref<64xf32, #hbm>
  %x = memref.alloc() : memref<64xf32, #sram>
  %t0 = nova.dma_start %a, %x : memref<64xf32, #hbm> -> memref<64xf32, #sram>
  nova.wait %t0
  %y = memref.alloc() : memref<64xf32, #sram>
  nova.elementwise <exp> ins(%x : memref<64xf32, #sram>) outs(%y : memref<64xf32, #sram>)
  %z = memref.alloc() : memref<64xf32, #sram>
  nova.elementwise <neg> ins(%y : memref<64xf32, #sram>) outs(%z : memref<64xf32, #sram>)
  %t1 = nova.dma_start %z, %r : memref<64xf32, #sram> -> memref<64xf32, #hbm>
  nova.wait %t1
  return %r : memref<64xf32, #hbm>
}

// -----

// A view keeps its base buffer live: %big is used through %row after %x is
// allocated, so %x cannot take %big's space, while %y (after %x's last use)
// reuses %x's.

// CHECK-LABEL: func.func @subview_keeps_base_live
// CHECK: memref.alloc() {nova.address = 0 : i64} : memref<2x64xf32, #nova.memory_space<sram>>
// CHECK: memref.subview
// CHECK: memref.alloc() {nova.address = 512 : i64} : memref<64xf32, #nova.memory_space<sram>>
// CHECK: memref.alloc() {nova.address = 512 : i64} : memref<64xf32, #nova.memory_space<sram>>
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak 768 bytes}}
func.func @subview_keeps_base_live() {
  %big = memref.alloc() : memref<2x64xf32, #sram>
  %row = memref.subview %big[1, 0] [1, 64] [1, 1] : memref<2x64xf32, #sram> to memref<64xf32, strided<[1], offset: 64>, #sram>
  %x = memref.alloc() : memref<64xf32, #sram>
  nova.fill 1.0 outs(%x : memref<64xf32, #sram>)
  nova.elementwise <copy> ins(%x : memref<64xf32, #sram>) outs(%row : memref<64xf32, strided<[1], offset: 64>, #sram>)
  %y = memref.alloc() : memref<64xf32, #sram>
  nova.elementwise <exp> ins(%row : memref<64xf32, strided<[1], offset: 64>, #sram>) outs(%y : memref<64xf32, #sram>)
  return
}

// -----

// A buffer allocated before a loop and used in it lives until the loop ends;
// buffers of the loop body live within one iteration; after the loop the
// space of %pre is free again.

// CHECK-LABEL: func.func @loop_lifetimes
// CHECK: %[[PRE:.*]] = memref.alloc() {nova.address = 0 : i64}
// CHECK: scf.for
// CHECK:   memref.alloc() {nova.address = 256 : i64}
// CHECK:   memref.alloc() {nova.address = 512 : i64}
// CHECK: }
// CHECK: memref.alloc() {nova.address = 0 : i64}
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak 768 bytes}}
func.func @loop_lifetimes(%out: memref<4x64xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %pre = memref.alloc() : memref<64xf32, #sram>
  nova.fill 1.0 outs(%pre : memref<64xf32, #sram>)
  scf.for %i = %c0 to %c4 step %c1 {
    %t1 = memref.alloc() : memref<64xf32, #sram>
    nova.elementwise <add> scalar(2.0) ins(%pre : memref<64xf32, #sram>) outs(%t1 : memref<64xf32, #sram>)
    %t2 = memref.alloc() : memref<64xf32, #sram>
    nova.elementwise <exp> ins(%t1 : memref<64xf32, #sram>) outs(%t2 : memref<64xf32, #sram>)
    %dst = memref.subview %out[%i, 0] [1, 64] [1, 1] : memref<4x64xf32, #hbm> to memref<64xf32, strided<[1], offset: ?>, #hbm>
    %t = nova.dma_start %t2, %dst : memref<64xf32, #sram> -> memref<64xf32, strided<[1], offset: ?>, #hbm>
    nova.wait %t
  }
  %post = memref.alloc() : memref<64xf32, #sram>
  nova.fill 0.0 outs(%post : memref<64xf32, #sram>)
  return
}

// -----

// A buffer read by a DMA stays live until the DMA's wait, not just until the
// dma_start: %y is allocated while %x is still being copied out.

// CHECK-LABEL: func.func @dma_in_flight_until_wait
// CHECK: memref.alloc() {nova.address = 0 : i64}
// CHECK: nova.dma_start
// CHECK: memref.alloc() {nova.address = 256 : i64}
// CHECK: nova.wait
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak 512 bytes}}
func.func @dma_in_flight_until_wait(%out: memref<64xf32, #hbm>) {
  %x = memref.alloc() : memref<64xf32, #sram>
  nova.fill 1.0 outs(%x : memref<64xf32, #sram>)
  %t = nova.dma_start %x, %out : memref<64xf32, #sram> -> memref<64xf32, #hbm>
  %y = memref.alloc() : memref<64xf32, #sram>
  nova.fill 2.0 outs(%y : memref<64xf32, #sram>)
  nova.wait %t
  return
}

// -----

// Accumulator tiles are planned in their own space; the second matmul's tile
// reuses the first's once it has been drained.

// CHECK-LABEL: func.func @acc_tiles
// CHECK-SAME: nova.acc_peak = 256 : i64
// CHECK-COUNT-2: memref.alloc() {nova.address = 0 : i64} : memref<8x8xf32, #nova.memory_space<acc>>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>
// expected-remark @+1 {{sram peak 512 bytes of 25165824, acc peak 256 bytes of 2097152}}
func.func @acc_tiles() {
  %lhs = memref.alloc() : memref<8x8xf32, #sram>
  nova.fill 1.0 outs(%lhs : memref<8x8xf32, #sram>)
  %c0 = memref.alloc() : memref<8x8xf32, #acc>
  nova.matmul ins(%lhs, %lhs : memref<8x8xf32, #sram>, memref<8x8xf32, #sram>) outs(%c0 : memref<8x8xf32, #acc>)
  %o0 = memref.alloc() : memref<8x8xf32, #sram>
  nova.elementwise <copy> ins(%c0 : memref<8x8xf32, #acc>) outs(%o0 : memref<8x8xf32, #sram>)
  %c1 = memref.alloc() : memref<8x8xf32, #acc>
  nova.matmul ins(%o0, %lhs : memref<8x8xf32, #sram>, memref<8x8xf32, #sram>) outs(%c1 : memref<8x8xf32, #acc>)
  %o1 = memref.alloc() : memref<8x8xf32, #sram>
  nova.elementwise <copy> ins(%c1 : memref<8x8xf32, #acc>) outs(%o1 : memref<8x8xf32, #sram>)
  return
}

// -----

// Globals follow the arguments; hbm intermediates follow the globals. A
// result that is a reshape of an alloc becomes the out-param through the
// inverse reshape, with no copy.

// CHECK: memref.global "private" constant @mask : memref<4x4xf32, #nova.memory_space<hbm>> = dense<1.000000e+00> {nova.address = 128 : i64}
// CHECK-LABEL: func.func @global_and_reshaped_result
// CHECK-SAME: (%[[A:.*]]: memref<16xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input"},
// CHECK-SAME: %[[OUT:.*]]: memref<2x8xf32, #nova.memory_space<hbm>> {nova.address = 64 : i64, nova.role = "output"})
// CHECK-SAME: nova.hbm_peak = 256 : i64
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0, 1]] : memref<2x8xf32, #nova.memory_space<hbm>> into memref<16xf32, #nova.memory_space<hbm>>
// CHECK: memref.get_global @mask
// CHECK: memref.alloc() {alignment = 64 : i64, nova.address = 192 : i64} : memref<16xf32, #nova.memory_space<hbm>>
// CHECK: nova.dma_start %{{.*}}, %[[FLAT]]
// CHECK-NOT: memref.copy
// CHECK: return{{$}}
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
memref.global "private" constant @mask : memref<4x4xf32, #hbm> = dense<1.0>
// expected-remark @+1 {{hbm peak 256 bytes}}
func.func @global_and_reshaped_result(%a: memref<16xf32, #hbm>) -> memref<2x8xf32, #hbm> {
  %r = memref.alloc() {alignment = 64 : i64} : memref<16xf32, #hbm>
  %m = memref.get_global @mask : memref<4x4xf32, #hbm>
  %tmp = memref.alloc() {alignment = 64 : i64} : memref<16xf32, #hbm>
  %t0 = nova.dma_start %a, %tmp : memref<16xf32, #hbm> -> memref<16xf32, #hbm>
  nova.wait %t0
  %x = memref.alloc() : memref<16xf32, #sram>
  %t1 = nova.dma_start %tmp, %x : memref<16xf32, #hbm> -> memref<16xf32, #sram>
  nova.wait %t1
  %t2 = nova.dma_start %x, %r : memref<16xf32, #sram> -> memref<16xf32, #hbm>
  nova.wait %t2
  %e = memref.expand_shape %r [[0, 1]] output_shape [2, 8] : memref<16xf32, #hbm> into memref<2x8xf32, #hbm>
  return %e : memref<2x8xf32, #hbm>
}

// -----

// A returned argument is copied into the out-param by DMA.

// CHECK-LABEL: func.func @returned_argument_is_copied
// CHECK-SAME: (%[[A:.*]]: memref<16xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input"},
// CHECK-SAME: %[[OUT:.*]]: memref<16xf32, #nova.memory_space<hbm>> {nova.address = 64 : i64, nova.role = "output"})
// CHECK: %[[T:.*]] = nova.dma_start %[[A]], %[[OUT]]
// CHECK: nova.wait %[[T]]
// CHECK: return{{$}}
#hbm = #nova.memory_space<hbm>
// expected-remark @+1 {{hbm peak 128 bytes}}
func.func @returned_argument_is_copied(%a: memref<16xf32, #hbm>) -> memref<16xf32, #hbm> {
  return %a : memref<16xf32, #hbm>
}

// -----

// The target of a DMA to a peer chip is written by the peers at times this
// chip's program order does not show, so it never shares its space: %after
// is allocated once %recv's last local use is over but still gets its own.

// CHECK-LABEL: func.func @peer_target_never_shared
// CHECK: memref.alloc() {nova.address = 128 : i64} : memref<16xf32, #nova.memory_space<hbm>>
// CHECK: memref.alloc() {nova.address = 192 : i64} : memref<16xf32, #nova.memory_space<hbm>>
#hbm = #nova.memory_space<hbm>
// expected-remark @+1 {{hbm peak 256 bytes}}
func.func @peer_target_never_shared(%a: memref<16xf32, #hbm>, %out: memref<16xf32, #hbm>) {
  %recv = memref.alloc() : memref<16xf32, #hbm>
  %t = nova.dma_start %a, %recv peer 1 : memref<16xf32, #hbm> -> memref<16xf32, #hbm>
  nova.wait %t
  %after = memref.alloc() : memref<16xf32, #hbm>
  %t1 = nova.dma_start %a, %after : memref<16xf32, #hbm> -> memref<16xf32, #hbm>
  nova.wait %t1
  %t2 = nova.dma_start %after, %out : memref<16xf32, #hbm> -> memref<16xf32, #hbm>
  nova.wait %t2
  return
}

// -----

// The same buffer returned twice (`return %a, %a` after CSE): the repeat
// gets a copy of its own, so both results become out-params.
// CHECK-LABEL: func.func @same_buffer_returned_twice
// CHECK-SAME: %[[O0:[a-z0-9_]+]]: memref<16xf32, #nova.memory_space<hbm>> {nova.address = {{[0-9]+}} : i64, nova.role = "output"},
// CHECK-SAME: %[[O1:[a-z0-9_]+]]: memref<16xf32, #nova.memory_space<hbm>> {nova.address = {{[0-9]+}} : i64, nova.role = "output"})
// CHECK: nova.dma_start %{{.*}}, %[[O0]]
// CHECK: nova.dma_start %[[O0]], %[[O1]]
// CHECK: return{{$}}
#hbm = #nova.memory_space<hbm>
// expected-remark @+1 {{hbm peak}}
func.func @same_buffer_returned_twice(%a: memref<16xf32, #hbm>) -> (memref<16xf32, #hbm>, memref<16xf32, #hbm>) {
  %r = memref.alloc() {alignment = 64 : i64} : memref<16xf32, #hbm>
  %t = nova.dma_start %a, %r : memref<16xf32, #hbm> -> memref<16xf32, #hbm>
  nova.wait %t
  return %r, %r : memref<16xf32, #hbm>, memref<16xf32, #hbm>
}

// -----

// A donated input updated in place (nova-alias-outputs + bufferization):
// its result's out-param shares the input's address and gets no copy.
// CHECK-LABEL: func.func @donated_in_place
// CHECK-SAME: (%[[P:.*]]: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.aliasing_output = 0 : i64, nova.role = "input"},
// CHECK-SAME: %[[G:.*]]: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64, nova.role = "input"},
// CHECK-SAME: %[[OUT:.*]]: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.aliases = 0 : i64, nova.role = "output"})
// CHECK: nova.dma_start %{{.*}}, %[[P]]
// CHECK-NOT: nova.dma_start
// CHECK: return{{$}}
// AGAIN-LABEL: func.func @donated_in_place
// AGAIN-SAME: {nova.address = 0 : i64, nova.aliasing_output = 0 : i64, nova.role = "input"}
// AGAIN-SAME: {nova.address = 256 : i64, nova.role = "input"}
// AGAIN-SAME: {nova.address = 0 : i64, nova.aliases = 0 : i64, nova.role = "output"}
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak 512 bytes}}
func.func @donated_in_place(%p: memref<64xf32, #hbm> {nova.aliasing_output = 0 : i64},
                            %g: memref<64xf32, #hbm>) -> memref<64xf32, #hbm> {
  %x = memref.alloc() : memref<64xf32, #sram>
  %t0 = nova.dma_start %p, %x : memref<64xf32, #hbm> -> memref<64xf32, #sram>
  nova.wait %t0
  %y = memref.alloc() : memref<64xf32, #sram>
  %t1 = nova.dma_start %g, %y : memref<64xf32, #hbm> -> memref<64xf32, #sram>
  nova.wait %t1
  nova.elementwise <sub> ins(%x, %y : memref<64xf32, #sram>, memref<64xf32, #sram>) outs(%x : memref<64xf32, #sram>)
  %t2 = nova.dma_start %x, %p : memref<64xf32, #sram> -> memref<64xf32, #hbm>
  nova.wait %t2
  return %p : memref<64xf32, #hbm>
}

// -----

// A donated result computed in a buffer of its own (its update could not be
// written in place) is copied into the input's buffer before the return.
// CHECK-LABEL: func.func @donated_copied_in
// CHECK-SAME: (%[[P:.*]]: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.aliasing_output = 0 : i64, nova.role = "input"},
// CHECK-SAME: %[[OUT:.*]]: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.aliases = 0 : i64, nova.role = "output"})
// CHECK: %[[R:.*]] = memref.alloc() {{.*}} : memref<64xf32, #nova.memory_space<hbm>>
// CHECK: nova.dma_start %{{.*}}, %[[R]]
// CHECK: %[[T:.*]] = nova.dma_start %[[R]], %[[P]]
// CHECK: nova.wait %[[T]]
// CHECK-NEXT: return{{$}}
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak 256 bytes}}
func.func @donated_copied_in(%p: memref<64xf32, #hbm> {nova.aliasing_output = 0 : i64}) -> memref<64xf32, #hbm> {
  %r = memref.alloc() : memref<64xf32, #hbm>
  %x = memref.alloc() : memref<64xf32, #sram>
  %t0 = nova.dma_start %p, %x : memref<64xf32, #hbm> -> memref<64xf32, #sram>
  nova.wait %t0
  nova.elementwise <neg> ins(%x : memref<64xf32, #sram>) outs(%x : memref<64xf32, #sram>)
  %t1 = nova.dma_start %x, %r : memref<64xf32, #sram> -> memref<64xf32, #hbm>
  nova.wait %t1
  return %r : memref<64xf32, #hbm>
}

// -----

// A buffer read through a transposed view (a weight's rows read as W^T by
// the matrix unit) lives until the view's last use: %w must not share its
// address with %x, which is written while %w's view is still to be read.

// CHECK-LABEL: func.func @transposed_view_keeps_buffer_alive
// CHECK: %[[W:.*]] = memref.alloc() {nova.address = 0 : i64} : memref<16x16xf32, #nova.memory_space<sram>>
// CHECK: memref.transpose %[[W]]
// CHECK: memref.alloc() {nova.address = 1024 : i64} : memref<16x16xf32, #nova.memory_space<sram>>
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>
// expected-remark @+1 {{sram peak 2048 bytes}}
func.func @transposed_view_keeps_buffer_alive(%a: memref<16x16xf32, #hbm>, %b: memref<16x16xf32, #hbm>) {
  %w = memref.alloc() : memref<16x16xf32, #sram>
  %t0 = nova.dma_start %a, %w : memref<16x16xf32, #hbm> -> memref<16x16xf32, #sram>
  nova.wait %t0
  %wt = memref.transpose %w (d0, d1) -> (d1, d0) : memref<16x16xf32, #sram> to memref<16x16xf32, strided<[1, 16]>, #sram>
  %x = memref.alloc() : memref<16x16xf32, #sram>
  %t1 = nova.dma_start %b, %x : memref<16x16xf32, #hbm> -> memref<16x16xf32, #sram>
  nova.wait %t1
  %acc = memref.alloc() : memref<16x16xf32, #acc>
  nova.matmul ins(%x, %wt : memref<16x16xf32, #sram>, memref<16x16xf32, strided<[1, 16]>, #sram>) outs(%acc : memref<16x16xf32, #acc>)
  return
}

// -----

// With a target, a buffer keeps its address to itself until the end of the
// next loop nest when the space allows it: the second loop's tile does not
// reuse the first loop's (its first load need not wait for the first loop's
// last read). %post, after the last loop nest, may reuse it.
// CHECK-LABEL: func.func @separate_adjacent_loops
// CHECK: scf.for
// CHECK:   memref.alloc() {nova.address = 0 : i64}
// CHECK: scf.for
// CHECK:   memref.alloc() {nova.address = 256 : i64}
// CHECK: memref.alloc() {nova.address = 0 : i64}
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak 512 bytes}}
func.func @separate_adjacent_loops(%in: memref<4x64xf32, #hbm>, %out: memref<4x64xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %src = memref.subview %in[%i, 0] [1, 64] [1, 1] : memref<4x64xf32, #hbm> to memref<64xf32, strided<[1], offset: ?>, #hbm>
    %t1 = memref.alloc() : memref<64xf32, #sram>
    %t = nova.dma_start %src, %t1 : memref<64xf32, strided<[1], offset: ?>, #hbm> -> memref<64xf32, #sram>
    nova.wait %t
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %dst = memref.subview %out[%i, 0] [1, 64] [1, 1] : memref<4x64xf32, #hbm> to memref<64xf32, strided<[1], offset: ?>, #hbm>
    %t2 = memref.alloc() : memref<64xf32, #sram>
    nova.fill 1.0 outs(%t2 : memref<64xf32, #sram>)
    %t = nova.dma_start %t2, %dst : memref<64xf32, #sram> -> memref<64xf32, strided<[1], offset: ?>, #hbm>
    nova.wait %t
  }
  %post = memref.alloc() : memref<64xf32, #sram>
  nova.fill 0.0 outs(%post : memref<64xf32, #sram>)
  return
}

// -----

// Kept apart, the two loops' tiles would not fit the 24 MiB of sram: the
// space is packed by liveness alone and they share an address.
// CHECK-LABEL: func.func @negative_separation_does_not_fit
// CHECK: scf.for
// CHECK:   memref.alloc() {nova.address = 0 : i64}
// CHECK: scf.for
// CHECK:   memref.alloc() {nova.address = 0 : i64}
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak 16777216 bytes}}
func.func @negative_separation_does_not_fit() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %t1 = memref.alloc() : memref<4194304xf32, #sram>
    nova.fill 1.0 outs(%t1 : memref<4194304xf32, #sram>)
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %t2 = memref.alloc() : memref<4194304xf32, #sram>
    nova.fill 2.0 outs(%t2 : memref<4194304xf32, #sram>)
  }
  return
}
