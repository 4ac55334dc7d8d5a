// RUN: nova-opt %s -split-input-file --nova-attach-target="target=tiny" --nova-plan-memory -verify-diagnostics

// The tiny target has 16 KiB of sram; two live 16 KiB tiles need 32 KiB.

#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
// The error names what is live at the peak, largest first, at its source.
// expected-remark @+3 {{sram peak 32768 bytes of 16384, acc peak 0 bytes of 2048}}
// expected-error @+2 {{function 'negative_sram_too_small' needs 32768 bytes of sram but target 'tiny' has 16384}}
// expected-note @+1 {{32768 bytes of sram live together in 2 buffers at the peak; the largest follow}}
func.func @negative_sram_too_small(%out: memref<4096xf32, #hbm>) {
  // expected-note @+1 {{16384 bytes: memref.alloc}}
  %x = memref.alloc() : memref<4096xf32, #sram>
  nova.fill 1.0 outs(%x : memref<4096xf32, #sram>)
  // expected-note @+1 {{16384 bytes: memref.alloc}}
  %y = memref.alloc() : memref<4096xf32, #sram>
  nova.elementwise <exp> ins(%x : memref<4096xf32, #sram>) outs(%y : memref<4096xf32, #sram>)
  %t = nova.dma_start %y, %out : memref<4096xf32, #sram> -> memref<4096xf32, #hbm>
  nova.wait %t
  return
}

// -----

// 2 KiB of accumulator: one 16x64 f32 tile needs 4 KiB.

#acc = #nova.memory_space<acc>
// expected-remark @+3 {{acc peak 4096 bytes of 2048}}
// expected-error @+2 {{function 'negative_acc_too_small' needs 4096 bytes of acc but target 'tiny' has 2048}}
// expected-note @+1 {{4096 bytes of acc live together in 1 buffers at the peak}}
func.func @negative_acc_too_small() {
  // expected-note @+1 {{4096 bytes: memref.alloc}}
  %c = memref.alloc() : memref<16x64xf32, #acc>
  return
}

// -----

// 1 MiB of hbm: the arguments alone need 2 MiB.

#hbm = #nova.memory_space<hbm>
// expected-remark @+2 {{hbm peak 2097152 bytes of 1048576}}
// expected-error @+1 {{function 'negative_hbm_too_small' needs 2097152 bytes of hbm but target 'tiny' has 1048576}}
func.func @negative_hbm_too_small(%a: memref<262144xf32, #hbm>, %b: memref<262144xf32, #hbm>) {
  return
}

// -----

// A buffer of a loop body that is yielded to the next iteration would need a
// different address in consecutive iterations.

#sram = #nova.memory_space<sram>
func.func @negative_escapes_iteration() {
  %init = memref.alloc() : memref<64xf32, #sram>
  nova.fill 1.0 outs(%init : memref<64xf32, #sram>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{a buffer allocated in this loop escapes its iteration through 'scf.yield'; it cannot have a static address}}
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%cur = %init) -> (memref<64xf32, #sram>) {
    %next = memref.alloc() : memref<64xf32, #sram>
    nova.elementwise <exp> ins(%cur : memref<64xf32, #sram>) outs(%next : memref<64xf32, #sram>)
    scf.yield %next : memref<64xf32, #sram>
  }
  return
}

// -----

// Function arguments are hbm buffers.

#sram = #nova.memory_space<sram>
// expected-error @+1 {{argument 0 of function 'negative_sram_argument' must live in hbm, got 'memref<64xf32, #nova.memory_space<sram>>'}}
func.func @negative_sram_argument(%a: memref<64xf32, #sram>) {
  return
}
