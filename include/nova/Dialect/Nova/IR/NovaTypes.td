//===- NovaTypes.td - nova dialect types -------------------*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVA_IR_NOVATYPES_TD
#define NOVA_DIALECT_NOVA_IR_NOVATYPES_TD

include "nova/Dialect/Nova/IR/NovaDialect.td"

def Nova_TokenType : Nova_Type<"Token", "token"> {
  let summary = "completion token of an asynchronous DMA or collective";
  let description = [{
    Returned by ops that run on an engine of their own (DMA, collective) and
    consumed by `nova.wait`, which blocks until the operation has completed.

    ```mlir
    %t = nova.dma_start %src, %dst : memref<128x128xf32, #nova.memory_space<hbm>> -> memref<128x128xf32, #nova.memory_space<sram>>
    nova.wait %t
    ```
  }];
}

#endif // NOVA_DIALECT_NOVA_IR_NOVATYPES_TD
