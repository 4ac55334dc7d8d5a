// RUN: nova-opt %s --split-input-file --nova-verify-collectives -verify-diagnostics | FileCheck %s

!b = memref<8x4xf32, #nova.memory_space<hbm>>
!c = memref<16x4xf32, #nova.memory_space<hbm>>

// Two stages that agree: the same all-reduce, then a send matched by a recv.
// CHECK-LABEL: func.func @stage0
// CHECK-LABEL: func.func @stage1
func.func @stage0(%x: !b, %y: !b) attributes {nova.chips = array<i64: 0>} {
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  %s = nova.send ins(%y : !b) to 1 channel 3
  nova.wait %t, %s
  return
}
func.func @stage1(%x: !b, %y: !b) attributes {nova.chips = array<i64: 1>} {
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  %r = nova.recv outs(%y : !b) from 0 channel 3
  nova.wait %t, %r
  return
}

// -----

!b = memref<8x4xf32, #nova.memory_space<hbm>>
!c = memref<16x4xf32, #nova.memory_space<hbm>>
func.func @op_differs0(%x: !b, %y: !b, %z: !c) attributes {nova.chips = array<i64: 0>} {
  // expected-error @+1 {{collective #0 between chip 0 and chip 1 does not match: chip 0 issues 'nova.all_reduce'}}
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  nova.wait %t
  return
}
func.func @op_differs1(%x: !b, %y: !b, %z: !c) attributes {nova.chips = array<i64: 1>} {
  // expected-note @+1 {{chip 1's collective}}
  %t = nova.all_gather ins(%x : !b) outs(%z : !c) dim 0 groups [[0, 1]]
  nova.wait %t
  return
}

// -----

!b = memref<8x4xf32, #nova.memory_space<hbm>>
!d = memref<4x4xf32, #nova.memory_space<hbm>>
func.func @shape_differs0(%x: !b, %y: !b) attributes {nova.chips = array<i64: 0>} {
  // expected-error @+1 {{groups [[0, 1]], chip 1 issues 'nova.all_reduce' kind #nova.reduction_kind<sum> on (memref<4x4xf32}}
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  nova.wait %t
  return
}
func.func @shape_differs1(%x: !d, %y: !d) attributes {nova.chips = array<i64: 1>} {
  // expected-note @+1 {{chip 1's collective}}
  %t = nova.all_reduce <sum> ins(%x : !d) outs(%y : !d) groups [[0, 1]]
  nova.wait %t
  return
}

// -----

// The second chip reduces with max, in a different order.
!b = memref<8x4xf32, #nova.memory_space<hbm>>
func.func @order_differs0(%x: !b, %y: !b) attributes {nova.chips = array<i64: 0>} {
  // expected-error @+1 {{collective #0 between chip 0 and chip 1 does not match}}
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  %u = nova.all_reduce <max> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  nova.wait %t, %u
  return
}
func.func @order_differs1(%x: !b, %y: !b) attributes {nova.chips = array<i64: 1>} {
  // expected-note @+1 {{chip 1's collective}}
  %u = nova.all_reduce <max> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  nova.wait %t, %u
  return
}

// -----

// Chip 1 skips the all-reduce chip 0 waits for.
!b = memref<8x4xf32, #nova.memory_space<hbm>>
func.func @missing0(%x: !b, %y: !b) attributes {nova.chips = array<i64: 0>} {
  // expected-error @+1 {{chip 1 issues nothing}}
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
  nova.wait %t
  return
}
func.func @missing1(%x: !b, %y: !b) attributes {nova.chips = array<i64: 1>} {
  return
}

// -----

// Different replica groups for the same collective.
!b = memref<8x4xf32, #nova.memory_space<hbm>>
func.func @groups_differ0(%x: !b, %y: !b) attributes {nova.chips = array<i64: 0, 2>} {
  // expected-error @+1 {{between chip 0 and chip 1 does not match}}
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1, 2, 3]]
  nova.wait %t
  return
}
func.func @groups_differ1(%x: !b, %y: !b) attributes {nova.chips = array<i64: 1, 3>} {
  // expected-note @+1 {{chip 1's collective}}
  %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1], [2, 3]]
  nova.wait %t
  return
}

// -----

!b = memref<8x4xf32, #nova.memory_space<hbm>>
func.func @unmatched_send(%x: !b) attributes {nova.chips = array<i64: 0>} {
  // expected-error @+1 {{send #0 from chip 0 to chip 1 on channel 0 has no matching nova.recv on chip 1}}
  %s = nova.send ins(%x : !b) to 1 channel 0
  nova.wait %s
  return
}
func.func @other_channel(%y: !b) attributes {nova.chips = array<i64: 1>} {
  // expected-error @+1 {{chip 1 receives from chip 0 on channel 5, but chip 0 never sends it}}
  %r = nova.recv outs(%y : !b) from 0 channel 5
  nova.wait %r
  return
}

// -----

!b = memref<8x4xf32, #nova.memory_space<hbm>>
!d = memref<4x4xf32, #nova.memory_space<hbm>>
func.func @send_type(%x: !b) attributes {nova.chips = array<i64: 0>} {
  // expected-error @+1 {{sends 'memref<8x4xf32, #nova.memory_space<hbm>>' but chip 1 receives 'memref<4x4xf32, #nova.memory_space<hbm>>'}}
  %s = nova.send ins(%x : !b) to 1 channel 0
  nova.wait %s
  return
}
func.func @recv_type(%y: !d) attributes {nova.chips = array<i64: 1>} {
  // expected-note @+1 {{chip 1's nova.recv}}
  %r = nova.recv outs(%y : !d) from 0 channel 0
  nova.wait %r
  return
}

// -----

!b = memref<8x4xf32, #nova.memory_space<hbm>>
func.func @to_nowhere(%x: !b) attributes {nova.chips = array<i64: 0>} {
  // expected-error @+1 {{sends from chip 0 to chip 5, which runs no program}}
  %s = nova.send ins(%x : !b) to 5 channel 0
  nova.wait %s
  return
}

// -----

// Collectives in a loop: only the simulator can tell; nothing is reported.
!b = memref<8x4xf32, #nova.memory_space<hbm>>
// CHECK-LABEL: func.func @looped0
// CHECK-LABEL: func.func @looped1
func.func @looped0(%x: !b, %y: !b, %n: index) attributes {nova.chips = array<i64: 0>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = nova.all_reduce <sum> ins(%x : !b) outs(%y : !b) groups [[0, 1]]
    nova.wait %t
  }
  return
}
func.func @looped1(%x: !b, %y: !b) attributes {nova.chips = array<i64: 1>} {
  return
}

// -----

// The receiving stage loops: it is left to the simulator, and the sender
// is not reported for sending to it.
!b = memref<8x4xf32, #nova.memory_space<hbm>>
// CHECK-LABEL: func.func @sends_to_a_looping_stage
func.func @sends_to_a_looping_stage(%x: !b) attributes {nova.chips = array<i64: 0>} {
  %t = nova.send ins(%x : !b) to 1 channel 0
  nova.wait %t
  return
}
func.func @receives_in_a_loop(%y: !b) attributes {nova.chips = array<i64: 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %t = nova.recv outs(%y : !b) from 0 channel 0
    nova.wait %t
  }
  return
}
