// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of replica groups of the collectives (shared rule set): one case per rule.

func.func @negative_groups_none(%a: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op needs at least one replica group}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%a : memref<8x4xf32, #nova.memory_space<hbm>>) groups []
  return
}

// -----

func.func @negative_groups_empty_group(%a: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op replica group 1 is empty}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%a : memref<8x4xf32, #nova.memory_space<hbm>>) groups [[0, 1], []]
  return
}

// -----

func.func @negative_groups_unequal(%a: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op replica groups must have one size, group 1 has 1 chips, group 0 has 2}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%a : memref<8x4xf32, #nova.memory_space<hbm>>) groups [[0, 1], [2]]
  return
}

// -----

func.func @negative_groups_negative_chip(%a: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op chip id -1 is negative}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%a : memref<8x4xf32, #nova.memory_space<hbm>>) groups [[0, -1]]
  return
}

// -----

func.func @negative_groups_duplicate_chip(%a: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op chip 1 appears in more than one replica group}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%a : memref<8x4xf32, #nova.memory_space<hbm>>) groups [[0, 1], [1, 2]]
  return
}

// -----

func.func @negative_groups_missing_chip(%a: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op chip 2 is in no replica group}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%a : memref<8x4xf32, #nova.memory_space<hbm>>) groups [[0, 3], [1, 4]]
  return
}

// -----

func.func @negative_barrier_duplicate() {
  // expected-error @+1 {{'nova.barrier' op chip 0 appears in more than one replica group}}
  %t = nova.barrier groups [[0, 0]]
  return
}
