//===- ReplicaGroups.cpp - replica groups of collectives --------*- C++ -*-===//
#include "nova/Dialect/Nova/IR/ReplicaGroups.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::nova;

/// Verifies replica groups: non-empty groups of one size, each chip in
/// exactly one group, and (with a target) every chip of the system covered.
/// Returns the group size, or failure.
FailureOr<int64_t> mlir::nova::verifyReplicaGroups(Operation *op,
                                                   ArrayAttr groups) {
  if (groups.empty())
    return op->emitOpError() << "needs at least one replica group";
  int64_t groupSize = -1;
  llvm::SmallSet<int64_t, 16> seen;
  int64_t maxChip = -1;
  for (auto [index, attr] : llvm::enumerate(groups)) {
    ArrayRef<int64_t> group = cast<DenseI64ArrayAttr>(attr).asArrayRef();
    if (group.empty())
      return op->emitOpError() << "replica group " << index << " is empty";
    if (groupSize < 0)
      groupSize = group.size();
    else if ((int64_t)group.size() != groupSize)
      return op->emitOpError()
             << "replica groups must have one size, group " << index
             << " has " << group.size() << " chips, group 0 has " << groupSize;
    for (int64_t chip : group) {
      if (chip < 0)
        return op->emitOpError() << "chip id " << chip << " is negative";
      if (!seen.insert(chip).second)
        return op->emitOpError()
               << "chip " << chip << " appears in more than one replica group";
      maxChip = std::max(maxChip, chip);
    }
  }
  int64_t chips = maxChip + 1;
  if (TargetAttr target = lookupTarget(op)) {
    if (maxChip >= target.getChips())
      return op->emitOpError() << "chip " << maxChip
                               << " is out of range for a target with "
                               << target.getChips() << " chips";
    chips = target.getChips();
  }
  for (int64_t chip = 0; chip < chips; ++chip)
    if (!seen.contains(chip))
      return op->emitOpError() << "chip " << chip << " is in no replica group";
  return groupSize;
}

ParseResult mlir::nova::parseReplicaGroups(OpAsmParser &parser,
                                           ArrayAttr &groups) {
  SmallVector<Attribute> list;
  auto parseGroup = [&]() -> ParseResult {
    SmallVector<int64_t> chips;
    if (parser.parseCommaSeparatedList(
            AsmParser::Delimiter::Square, [&]() -> ParseResult {
              return parser.parseInteger(chips.emplace_back());
            }))
      return failure();
    list.push_back(DenseI64ArrayAttr::get(parser.getContext(), chips));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseGroup))
    return failure();
  groups = ArrayAttr::get(parser.getContext(), list);
  return success();
}

void mlir::nova::printReplicaGroups(OpAsmPrinter &printer, Operation *,
                                    ArrayAttr groups) {
  printer << "[";
  llvm::interleaveComma(groups, printer, [&](Attribute attr) {
    printer << "[";
    llvm::interleaveComma(cast<DenseI64ArrayAttr>(attr).asArrayRef(), printer);
    printer << "]";
  });
  printer << "]";
}

