// RUN: not nova-opt %s "--convert-nova-to-isa=loop-dma-queues=5 dma-queues=4" 2>&1 | FileCheck %s --check-prefix=QUEUES
// RUN: not nova-opt %s "--convert-nova-to-isa=loop-dma-queues=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not nova-opt %s "--convert-nova-to-isa=loop-dma-policy=zigzag" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not nova-opt %s "--convert-nova-to-isa=semaphores=65" 2>&1 | FileCheck %s --check-prefix=SEMS

// QUEUES: error: loop-dma-queues must be in 1..dma-queues (4), got 5
// ZERO: error: loop-dma-queues must be in 1..dma-queues (4), got 0
// POLICY: error: loop-dma-policy must be `split` or `round-robin`, got `zigzag`
// SEMS: error: semaphores must be in 1..64, got 65
func.func @negative_options() {
  return
}
