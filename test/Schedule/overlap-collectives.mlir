// RUN: nova-opt %s --split-input-file --nova-overlap-collectives | FileCheck %s

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!s = memref<8x8xf32, #nova.memory_space<sram>>

// An independent load-compute-store chain (on %x, into %z) moves in front of
// the all-reduce's wait, with its allocs and its own waits; the load of the
// reduced buffer %r stays behind it.
// CHECK-LABEL: func.func @independent_chain_moves_up
// CHECK: %[[T:.*]] = nova.all_reduce
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: %[[L:.*]] = nova.dma_start %[[X:.*]], %{{.*}} : memref<8x8xf32, #nova.memory_space<hbm>> -> memref<8x8xf32, #nova.memory_space<sram>>
// CHECK-NEXT: nova.wait %[[L]]
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: nova.elementwise <exp>
// CHECK-NEXT: %[[S:.*]] = nova.dma_start
// CHECK-NEXT: nova.wait %[[S]]
// CHECK-NEXT: nova.wait %[[T]]
// CHECK-NEXT: nova.dma_start %{{.*}}, %{{.*}} : memref<8x8xf32, #nova.memory_space<hbm>> -> memref<8x8xf32, #nova.memory_space<sram>>
func.func @independent_chain_moves_up(%p: !h, %r: !h, %x: !h, %z: !h, %o: !s) {
  %t = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1]]
  nova.wait %t
  %a = memref.alloc() : !s
  %l = nova.dma_start %x, %a : !h -> !s
  nova.wait %l
  %b = memref.alloc() : !s
  nova.elementwise <exp> ins(%a : !s) outs(%b : !s)
  %st = nova.dma_start %b, %z : !s -> !h
  nova.wait %st
  %u = nova.dma_start %r, %o : !h -> !s
  nova.wait %u
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!s = memref<8x8xf32, #nova.memory_space<sram>>

// Writing the all-reduce's input (a buffer it may still be reading) or
// reading its output must wait; so must an op that overwrites what such an
// op still reads (%y, through a view). The independent load after them still moves;
// the views stay beside the users that stay (pure ops move only with a user).
// CHECK-LABEL: func.func @conflicts_stay
// CHECK: %[[T:.*]] = nova.all_reduce
// CHECK: memref.alloc
// CHECK-NEXT: %[[L:.*]] = nova.dma_start %{{.*}}, %{{.*}} : memref<8x8xf32, #nova.memory_space<hbm>> -> memref<8x8xf32, #nova.memory_space<sram>>
// CHECK-NEXT: nova.wait %[[L]]
// CHECK-NEXT: nova.wait %[[T]]
// CHECK-NEXT: memref.subview
// CHECK-NEXT: memref.subview
// CHECK-NEXT: %[[W:.*]] = nova.dma_start %{{.*}}, %[[SUB:.*]] :
// CHECK-NEXT: nova.wait %[[W]]
// CHECK-NEXT: nova.elementwise <exp>
func.func @conflicts_stay(%p: !h, %r: !h, %x: !h, %y: !s, %q: !s) {
  %t = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1]]
  nova.wait %t
  %v = memref.subview %p[0, 0] [4, 8] [1, 1] : !h to memref<4x8xf32, strided<[8, 1]>, #nova.memory_space<hbm>>
  %ys = memref.subview %y[0, 0] [4, 8] [1, 1] : !s to memref<4x8xf32, strided<[8, 1]>, #nova.memory_space<sram>>
  %w = nova.dma_start %ys, %v : memref<4x8xf32, strided<[8, 1]>, #nova.memory_space<sram>> -> memref<4x8xf32, strided<[8, 1]>, #nova.memory_space<hbm>>
  nova.wait %w
  nova.elementwise <exp> ins(%q : !s) outs(%y : !s)
  %a = memref.alloc() : !s
  %l = nova.dma_start %x, %a : !h -> !s
  nova.wait %l
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!s = memref<8x8xf32, #nova.memory_space<sram>>

// A wait for a transfer started before the collective is a barrier: the
// analysis does not follow that transfer.
// CHECK-LABEL: func.func @foreign_wait_is_a_barrier
// CHECK: nova.all_reduce
// CHECK-NEXT: nova.wait
// CHECK-NEXT: nova.wait
// CHECK-NEXT: nova.elementwise <exp>
func.func @foreign_wait_is_a_barrier(%p: !h, %r: !h, %x: !h, %a: !s, %b: !s) {
  %l = nova.dma_start %x, %a : !h -> !s
  %t = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1]]
  nova.wait %t
  nova.wait %l
  nova.elementwise <exp> ins(%a : !s) outs(%b : !s)
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!s = memref<8x8xf32, #nova.memory_space<sram>>

// A read of the reduced buffer through memref.transpose (how a transposed
// matmul operand is staged) is a read of that buffer: it stays.
// CHECK-LABEL: func.func @read_through_transpose_stays
// CHECK: nova.all_reduce
// CHECK-NEXT: nova.wait
// CHECK-NEXT: scf.for
func.func @read_through_transpose_stays(%kp: !h, %k: !h, %ks: !s) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = nova.all_reduce <sum> ins(%kp : !h) outs(%k : !h) groups [[0, 1]]
  nova.wait %t
  scf.for %i = %c0 to %c1 step %c1 {
    %kt = memref.transpose %k (i, j) -> (j, i) : !h to memref<8x8xf32, strided<[1, 8]>, #nova.memory_space<hbm>>
    %l = nova.dma_start %kt, %ks : memref<8x8xf32, strided<[1, 8]>, #nova.memory_space<hbm>> -> !s
    nova.wait %l
  }
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!s = memref<8x8xf32, #nova.memory_space<sram>>

// A wait that also covers a second all-reduce is left alone: nothing may
// move past it.
// CHECK-LABEL: func.func @shared_wait_is_left_alone
// CHECK: nova.all_reduce
// CHECK-NEXT: nova.all_reduce
// CHECK-NEXT: nova.wait
// CHECK-NEXT: nova.dma_start
func.func @shared_wait_is_left_alone(%p1: !h, %r1: !h, %p2: !h, %r2: !h, %a: !s) {
  %t1 = nova.all_reduce <sum> ins(%p1 : !h) outs(%r1 : !h) groups [[0, 1]]
  %t2 = nova.all_reduce <sum> ins(%p2 : !h) outs(%r2 : !h) groups [[0, 1]]
  nova.wait %t1, %t2
  %l = nova.dma_start %r2, %a : !h -> !s
  nova.wait %l
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>

// Freeing the all-reduce's input counts as writing it: it stays.
// CHECK-LABEL: func.func @dealloc_stays
// CHECK: nova.wait
// CHECK-NEXT: memref.dealloc
func.func @dealloc_stays(%r: !h) {
  %p = memref.alloc() : !h
  %t = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1]]
  nova.wait %t
  memref.dealloc %p : !h
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!s = memref<8x8xf32, #nova.memory_space<sram>>

// An allocation moves with the first user that moves and otherwise stays
// where it was: hoisting the buffer of an op that stays behind the wait would
// keep it live across everything the collective overlaps (a DP training step's
// early loss all-reduce once held every SRAM tile of the backward pass live).
// CHECK-LABEL: func.func @allocations_move_with_their_users
// CHECK: %[[T:.*]] = nova.all_reduce
// CHECK-NEXT: %[[A:.*]] = memref.alloc()
// CHECK-NEXT: %[[L:.*]] = nova.dma_start %{{.*}}, %[[A]]
// CHECK-NEXT: nova.wait %[[L]]
// CHECK-NEXT: nova.wait %[[T]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc()
// CHECK-NEXT: %[[R:.*]] = nova.dma_start %{{.*}}, %[[B]]
func.func @allocations_move_with_their_users(%p: !h, %r: !h, %x: !h) {
  %t = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1]]
  nova.wait %t
  %b = memref.alloc() : !s
  %a = memref.alloc() : !s
  %u = nova.dma_start %r, %b : !h -> !s
  nova.wait %u
  %l = nova.dma_start %x, %a : !h -> !s
  nova.wait %l
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!s = memref<8x8xf32, #nova.memory_space<sram>>

// A load into a scratchpad tile that an op behind the wait reads stays
// behind the wait too (moving it would hold the tile live across the
// overlapped compute, as an optimizer's loads of p, m and v before the
// gradient's all-reduce did); the independent load and its consumer move.
// CHECK-LABEL: func.func @scratchpad_reads_behind_the_wait
// CHECK: %[[T:.*]] = nova.all_reduce
// CHECK: %[[I:.*]] = nova.dma_start %{{.*}}, %[[Y:.*]] :
// CHECK-NEXT: nova.wait %[[I]]
// CHECK-NEXT: nova.elementwise <exp> ins(%[[Y]]
// CHECK-NEXT: nova.wait %[[T]]
// CHECK-NEXT: %[[L:.*]] = nova.dma_start %{{.*}}, %[[X:.*]] :
// CHECK-NEXT: nova.wait %[[L]]
// CHECK-NEXT: nova.dma_start %arg1, %[[G:.*]] :
func.func @scratchpad_reads_behind_the_wait(%p: !h, %r: !h, %w: !h, %z: !h, %x: !s, %g: !s, %y: !s, %o: !s) {
  %t = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1]]
  nova.wait %t
  %l = nova.dma_start %w, %x : !h -> !s
  nova.wait %l
  %u = nova.dma_start %r, %g : !h -> !s
  nova.wait %u
  nova.elementwise <add> ins(%x, %g : !s, !s) outs(%x : !s)
  %i = nova.dma_start %z, %y : !h -> !s
  nova.wait %i
  nova.elementwise <exp> ins(%y : !s) outs(%o : !s)
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!s = memref<8x8xf32, #nova.memory_space<sram>>

// Two collectives in flight, the earlier one's wait behind the later one's:
// independent work moves in front of both waits (an earlier collective's
// wait stays and pins that collective's buffers, it no longer ends the
// scan), and the load of the later one's result stays behind its wait.
// CHECK-LABEL: func.func @earlier_waits_stay
// CHECK: %[[T1:.*]] = nova.all_reduce <sum> ins(%arg0
// CHECK-NEXT: %[[T2:.*]] = nova.all_reduce <sum> ins(%arg1
// CHECK-NEXT: %[[L:.*]] = nova.dma_start %arg4
// CHECK-NEXT: nova.wait %[[L]]
// CHECK-NEXT: nova.wait %[[T2]]
// CHECK-NEXT: %[[U:.*]] = nova.dma_start %arg3
// CHECK-NEXT: nova.wait %[[U]]
// CHECK-NEXT: nova.wait %[[T1]]
func.func @earlier_waits_stay(%p: !h, %q: !h, %r: !h, %r2: !h, %x: !h, %y: !s, %z: !s) {
  %t1 = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1]]
  %t2 = nova.all_reduce <sum> ins(%q : !h) outs(%r2 : !h) groups [[0, 1]]
  nova.wait %t2
  nova.wait %t1
  %u = nova.dma_start %r2, %z : !h -> !s
  nova.wait %u
  %l = nova.dma_start %x, %y : !h -> !s
  nova.wait %l
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>

// Point-to-point transfers keep their order: the send of the reduced
// gradient stays behind the wait, and the recv after it does not jump over
// it (on two pipeline stages each would wait to receive first: deadlock).
// CHECK-LABEL: func.func @recv_does_not_pass_a_send
// CHECK: %[[T:.*]] = nova.all_reduce
// CHECK-NEXT: nova.wait %[[T]]
// CHECK-NEXT: nova.send
// CHECK-NEXT: nova.recv
func.func @recv_does_not_pass_a_send(%p: !h, %r: !h, %in: !h) {
  %t = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1], [2, 3]]
  nova.wait %t
  %s = nova.send ins(%r : !h) to 2 channel 4
  %v = nova.recv outs(%in : !h) from 2 channel 4
  nova.wait %v
  nova.wait %s
  return
}

// -----

!h = memref<8x8xf32, #nova.memory_space<hbm>>
!v = memref<4x8xf32, strided<[8, 1]>, #nova.memory_space<hbm>>
!w = memref<4x8xf32, strided<[8, 1], offset: 32>, #nova.memory_space<hbm>>
!s = memref<4x8xf32, #nova.memory_space<sram>>

// The pass numbers ops only from the wait to the last op that moves. A
// moved load's view made after the wait moves with it, one made before the
// all-reduce stays where it is; the scan stops at the send, so the view and
// the load after it stay even though they are independent.
// CHECK-LABEL: func.func @moved_views_and_the_scan_stops_at_a_send
// CHECK: %[[V0:.*]] = memref.subview %{{.*}}[0, 0]
// CHECK-NEXT: %[[T:.*]] = nova.all_reduce
// CHECK-NEXT: %[[V1:.*]] = memref.subview %{{.*}}[4, 0]
// CHECK-NEXT: %[[L1:.*]] = nova.dma_start %[[V1]]
// CHECK-NEXT: nova.wait %[[L1]]
// CHECK-NEXT: %[[L0:.*]] = nova.dma_start %[[V0]]
// CHECK-NEXT: nova.wait %[[L0]]
// CHECK-NEXT: nova.wait %[[T]]
// CHECK-NEXT: nova.send
// CHECK-NEXT: memref.subview %{{.*}}[4, 0]
// CHECK-NEXT: nova.dma_start
func.func @moved_views_and_the_scan_stops_at_a_send(%p: !h, %r: !h, %x: !h, %y: !h,
                                                     %a: !s, %b: !s, %c: !s) {
  %v0 = memref.subview %x[0, 0] [4, 8] [1, 1] : !h to !v
  %t = nova.all_reduce <sum> ins(%p : !h) outs(%r : !h) groups [[0, 1], [2, 3]]
  nova.wait %t
  %v1 = memref.subview %x[4, 0] [4, 8] [1, 1] : !h to !w
  %l1 = nova.dma_start %v1, %a : !w -> !s
  nova.wait %l1
  %l0 = nova.dma_start %v0, %b : !v -> !s
  nova.wait %l0
  %s = nova.send ins(%r : !h) to 2 channel 4
  %v2 = memref.subview %y[4, 0] [4, 8] [1, 1] : !h to !w
  %l2 = nova.dma_start %v2, %c : !w -> !s
  nova.wait %l2
  nova.wait %s
  return
}
