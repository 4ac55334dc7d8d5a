// The nova-linalg-normalize pipeline on the Softmax (max-with-index reduction) fixture
// (test/Fixtures/generate.py). Five runs: what the pipeline produces, the
// normal-form exclusions over the whole output, and generic, matmul and
// batch_matmul counts.
// RUN: nova-opt %S/../Fixtures/softmax.mlir --nova-linalg-normalize | FileCheck %s
// RUN: nova-opt %S/../Fixtures/softmax.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=FORM
// RUN: nova-opt %S/../Fixtures/softmax.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=COUNT

// FORM-NOT: f64
// FORM-NOT: linalg.index
// FORM-NOT: {{xi1>|xi32>|xi64>|: i64|: i1 }}
// FORM-NOT: linalg.conv
// FORM-NOT: math.fpowi
// FORM-NOT: tensor.extract %
// FORM-NOT: linalg.yield %{{.*}}, %{{.*}}

// CHECK-LABEL: func.func @forward
// CHECK: linalg.generic {{.*}}"reduction"
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}"reduction"
// CHECK: arith.addf
// CHECK: arith.divf

// COUNT-LABEL: func.func @forward
// COUNT-COUNT-4: linalg.generic
// COUNT-NOT: linalg.generic

// RUN: nova-opt %S/../Fixtures/softmax.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=MATMUL
// MATMUL-LABEL: func.func @forward
// MATMUL-NOT: linalg.matmul
// RUN: nova-opt %S/../Fixtures/softmax.mlir --nova-linalg-normalize | FileCheck %s --check-prefix=BATCHMM
// BATCHMM-LABEL: func.func @forward
// BATCHMM-NOT: linalg.batch_matmul
