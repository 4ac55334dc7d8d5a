// A stage one tool hands the next as bytecode is read as such: its bytes are
// not scanned as text for the literals MLIR's text parsers abort on (a long
// run of digits in a string is one in the bytecode's string table).
// RUN: nova-opt %s --emit-bytecode | nova-opt | FileCheck %s
// RUN: nova-opt %s --emit-bytecode --verify-each=false | nova-opt --emit-bytecode | nova-opt | FileCheck %s

// CHECK-LABEL: func.func @digits_in_a_string
// CHECK-SAME: note = "375937593759375937593759"
func.func @digits_in_a_string() attributes {note = "375937593759375937593759"} {
  return
}
