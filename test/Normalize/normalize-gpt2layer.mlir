// The nova-linalg-normalize pipeline on the GPT, 2 layers fixture
// (test/Fixtures/generate.py). Five runs: what the pipeline produces, the
// normal-form exclusions over the whole output, and generic, matmul and
// batch_matmul counts.
// RUN: nova-opt %S/../Fixtures/gpt2layer.mlir --nova-linalg-normalize | FileCheck %s
// RUN: nova-opt %S/../Fixtures/gpt2layer.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=FORM
// RUN: nova-opt %S/../Fixtures/gpt2layer.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=COUNT

// FORM-NOT: f64
// FORM-NOT: linalg.index
// FORM-NOT: {{xi1>|xi32>|xi64>|: i64|: i1 }}
// FORM-NOT: linalg.conv
// FORM-NOT: math.fpowi
// FORM-NOT: tensor.extract %
// FORM-NOT: linalg.yield %{{.*}}, %{{.*}}

// CHECK-LABEL: func.func @forward
// One mask constant, shared by both layers after cse.
// CHECK: arith.constant dense<{{.*}}> : tensor<8x8xf32>
// CHECK-NOT: arith.constant dense
// CHECK-COUNT-2: math.erf

// COUNT-LABEL: func.func @forward
// COUNT-COUNT-42: linalg.generic
// COUNT-NOT: linalg.generic

// RUN: nova-opt %S/../Fixtures/gpt2layer.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=MATMUL
// MATMUL-LABEL: func.func @forward
// MATMUL-COUNT-12: linalg.matmul
// MATMUL-NOT: linalg.matmul
// RUN: nova-opt %S/../Fixtures/gpt2layer.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=BATCHMM
// BATCHMM-LABEL: func.func @forward
// BATCHMM-COUNT-4: linalg.batch_matmul
// BATCHMM-NOT: linalg.batch_matmul
