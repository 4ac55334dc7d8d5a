//===- AliasOutputs.cpp - write donated results in place --------*- C++ -*-===//
//
// An argument with `nova.aliasing_output = k` is donated to result k. When
// result k is an elementwise generic over the argument, the generic is made
// to read and write the argument through its `outs` operand, so that one-shot
// bufferization updates the argument's buffer in place; everything else is
// left for nova-plan-memory's copy into the argument at the end.
//
//===----------------------------------------------------------------------===//
#include "nova/Tile/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "nova-alias-outputs"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAALIASOUTPUTS
#include "nova/Tile/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {


/// Why result `value` cannot be computed in the buffer of `arg`, or "" when
/// it can: `value` must come from an all-parallel, one-result generic whose
/// init is a fresh tensor.empty, which reads `arg` with the result's indexing
/// map and is the last user of `arg` in its block.
std::string whyNotInPlace(BlockArgument arg, Value value) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic)
    return "it is not computed by a linalg.generic";
  if (generic->getNumResults() != 1 || generic.getNumDpsInits() != 1)
    return "its generic has several results";
  if (generic.getNumParallelLoops() != generic.getNumLoops())
    return "its generic has a reduction loop";
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      generic.payloadUsesValueFromOperand(init))
    return "its generic reads its destination";
  AffineMap outMap = generic.getMatchingIndexingMap(init);
  bool reads = false;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    if (input->get() != arg)
      continue;
    if (generic.getMatchingIndexingMap(input) != outMap)
      return "its generic reads the argument with another indexing map";
    reads = true;
  }
  if (!reads)
    return "its generic does not read the argument";
  Block *block = generic->getBlock();
  for (Operation *user : arg.getUsers()) {
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (ancestor == generic.getOperation())
      continue;
    if (!ancestor || !ancestor->isBeforeInBlock(generic))
      return "the argument is read after the generic";
  }
  return "";
}

/// Rebuilds `generic` with `arg` as its destination: the inputs that were
/// `arg` are dropped and their block arguments become the `outs` one.
void writeInto(linalg::GenericOp generic, BlockArgument arg) {
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : generic.getDpsInputOperands())
    if (input->get() != arg) {
      inputs.push_back(input->get());
      maps.push_back(generic.getMatchingIndexingMap(input));
    }
  maps.push_back(generic.getMatchingIndexingMap(generic.getDpsInitOperand(0)));
  OpBuilder b(generic);
  Block *old = generic.getBody();
  auto rebuilt = linalg::GenericOp::create(
      b, generic.getLoc(), generic.getResultTypes(), inputs, ValueRange{arg},
      maps, generic.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location, ValueRange blockArgs) {
        IRMapping mapping;
        unsigned next = 0;
        Value out = blockArgs.back();
        for (OpOperand *input : generic.getDpsInputOperands()) {
          BlockArgument from = old->getArgument(input->getOperandNumber());
          mapping.map(from, input->get() == arg ? out : blockArgs[next++]);
        }
        for (Operation &op : *old)
          nested.clone(op, mapping);
      });
  // Discardable attributes (fusion marks and the like) stay with the op.
  for (NamedAttribute attr : generic->getDiscardableAttrs())
    rebuilt->setAttr(attr.getName(), attr.getValue());
  generic->replaceAllUsesWith(rebuilt);
  generic.erase();
}

struct AliasOutputsPass
    : public nova::impl::NovaAliasOutputsBase<AliasOutputsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<std::pair<BlockArgument, unsigned>> donated;
    DenseMap<unsigned, unsigned> donorOf;
    unsigned numResults = func.getNumResults();
    for (BlockArgument arg : func.getArguments()) {
      Attribute attr = func.getArgAttr(arg.getArgNumber(),
          nova::NovaDialect::AliasingOutputAttrHelper::getNameStr());
      if (!attr)
        continue;
      auto index = dyn_cast<IntegerAttr>(attr);
      if (!index || index.getInt() < 0 || index.getInt() >= numResults) {
        func.emitError() << "argument " << arg.getArgNumber() << ": '"
                         << nova::NovaDialect::AliasingOutputAttrHelper::getNameStr()
                         << "' must be a result index in [0, "
                         << numResults << "), got " << attr;
        return signalPassFailure();
      }
      unsigned k = index.getInt();
      if (func.getResultTypes()[k] != arg.getType()) {
        func.emitError() << "argument " << arg.getArgNumber() << " of type "
                         << arg.getType() << " is donated to result " << k
                         << " of type " << func.getResultTypes()[k];
        return signalPassFailure();
      }
      auto [it, inserted] = donorOf.try_emplace(k, arg.getArgNumber());
      if (!inserted) {
        func.emitError() << "arguments " << it->second << " and "
                         << arg.getArgNumber() << " are both donated to result "
                         << k;
        return signalPassFailure();
      }
      donated.push_back({arg, k});
    }
    if (donated.empty())
      return;

    SmallVector<func::ReturnOp> returns(func.getOps<func::ReturnOp>());
    if (returns.size() != 1 || func.getBlocks().size() != 1) {
      func.emitRemark() << "donated results are copied: the function has "
                           "more than one block";
      numCopied += donated.size();
      return;
    }
    func::ReturnOp ret = returns.front();
    for (auto [arg, k] : donated) {
      Value value = ret.getOperand(k);
      if (value == arg) {
        ++numInPlace;
        continue;
      }
      std::string why = whyNotInPlace(arg, value);
      if (!why.empty()) {
        Operation *at = value.getDefiningOp();
        (at ? at->emitRemark() : func.emitRemark())
            << "result " << k << " is copied into argument "
                          << arg.getArgNumber() << ": " << why;
        ++numCopied;
        continue;
      }
      writeInto(value.getDefiningOp<linalg::GenericOp>(), arg);
      ++numInPlace;
    }
  }
};

} // namespace
