// RUN: nova-opt %s -split-input-file --nova-attach-target --nova-plan-memory -verify-diagnostics | FileCheck %s

// A stacked argument (nova-roll-layers) gets its place among the arguments;
// its members get none of their own: each lies at its slot of the stack, so
// the runtime's writes of the members fill the stack.
// CHECK-LABEL: func.func @stack_members_lie_in_their_slots
// CHECK-SAME: %{{.*}}: memref<16xf32, #nova.memory_space<hbm>> {nova.address = 64 : i64, nova.role = "input"}
// CHECK-SAME: %{{.*}}: memref<8xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input"}
// CHECK-SAME: %{{.*}}: memref<16xf32, #nova.memory_space<hbm>> {nova.address = 128 : i64, nova.role = "input"}
// CHECK-SAME: %{{.*}}: memref<2x16xf32, #nova.memory_space<hbm>> {nova.address = 64 : i64, nova.role = "input", nova.stack_of = array<i64: 0, 2>}
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
// expected-remark @+1 {{sram peak}}
func.func @stack_members_lie_in_their_slots(%w0: memref<16xf32, #hbm>, %x: memref<8xf32, #hbm>,
    %w1: memref<16xf32, #hbm>, %ws: memref<2x16xf32, #hbm> {nova.stack_of = array<i64: 0, 2>}) {
  return
}

// -----

#hbm = #nova.memory_space<hbm>
// expected-error @+1 {{argument 2: 'nova.stack_of' member 1 is not one slot of the stack}}
func.func @negative_member_of_another_shape(%w0: memref<16xf32, #hbm>, %w1: memref<8xf32, #hbm>,
    %ws: memref<2x16xf32, #hbm> {nova.stack_of = array<i64: 0, 1>}) {
  return
}

// -----

#hbm = #nova.memory_space<hbm>
// expected-error @+1 {{argument 1: 'nova.stack_of' needs a memref with an identity layout whose first dimension counts its members}}
func.func @negative_wrong_count(%w0: memref<16xf32, #hbm>,
    %ws: memref<2x16xf32, #hbm> {nova.stack_of = array<i64: 0>}) {
  return
}
