//===- FoldShapeConstants.cpp - integer tensors -> f32 constants -*- C++ -*-===//
//
// Evaluates integer/i1 tensor computations whose inputs are compile-time
// constants (iotas from linalg.index, fills, reshapes, elementwise integer
// arithmetic and comparisons) with a small interpreter over the payload of
// each linalg op, then hands the results to their float consumers as f32
// constants. Integer computations that depend on the program's inputs (token
// ids, attention masks) are left alone: the vector unit computes them on
// chip. Analysis runs to completion before the IR is changed.
//
//===----------------------------------------------------------------------===//
#include "nova/Input/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "nova-fold-shape-constants"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFOLDSHAPECONSTANTS
#include "nova/Input/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

bool isIntegerLike(Type type) {
  Type element = getElementTypeOrSelf(type);
  return isa<IntegerType, IndexType>(element);
}

bool isIntegerTensor(Type type) {
  return isa<RankedTensorType>(type) && isIntegerLike(type);
}

unsigned bitWidth(Type type) {
  Type element = getElementTypeOrSelf(type);
  return element.isIndex() ? IndexType::kInternalStorageBitWidth
                           : element.getIntOrFloatBitWidth();
}

/// A tensor whose elements are known at compile time, row-major.
struct KnownTensor {
  RankedTensorType type;
  SmallVector<APInt> values;
};

int64_t linearize(ArrayRef<int64_t> index, ArrayRef<int64_t> shape) {
  int64_t linear = 0;
  for (auto [i, size] : llvm::zip_equal(index, shape))
    linear = linear * size + i;
  return linear;
}

/// Evaluates integer ops of a linalg payload at one point of the iteration
/// space. Fails (with a reason) on anything it does not model.
class PayloadInterpreter {
public:
  PayloadInterpreter(ArrayRef<int64_t> point) : point(point) {}

  DenseMap<Value, APInt> env;

  FailureOr<APInt> lookup(Value value, std::string &why) {
    auto it = env.find(value);
    if (it != env.end())
      return it->second;
    IntegerAttr attr;
    if (matchPattern(value, m_Constant(&attr)))
      return attr.getValue().zextOrTrunc(bitWidth(value.getType()));
    why = "payload reads a value that is not a compile-time constant";
    return failure();
  }

  /// Runs `op`; on success its results are in `env`.
  LogicalResult run(Operation *op, std::string &why) {
    auto operand = [&](unsigned i) { return lookup(op->getOperand(i), why); };
    auto unary = [&](auto fn) -> LogicalResult {
      FailureOr<APInt> a = operand(0);
      if (failed(a))
        return failure();
      env[op->getResult(0)] = fn(*a, bitWidth(op->getResult(0).getType()));
      return success();
    };
    auto binary = [&](auto fn) -> LogicalResult {
      FailureOr<APInt> a = operand(0), b = operand(1);
      if (failed(a) || failed(b))
        return failure();
      env[op->getResult(0)] = fn(*a, *b);
      return success();
    };
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      env[index] = APInt(IndexType::kInternalStorageBitWidth,
                         point[index.getDim()], /*isSigned=*/true);
      return success();
    }
    if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
      auto attr = dyn_cast<IntegerAttr>(cst.getValue());
      if (!attr) {
        why = "payload holds a non-integer constant";
        return failure();
      }
      env[cst] = attr.getValue().zextOrTrunc(bitWidth(cst.getType()));
      return success();
    }
    if (isa<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp>(op))
      return unary([](APInt a, unsigned w) { return a.sextOrTrunc(w); });
    if (isa<arith::IndexCastUIOp, arith::ExtUIOp>(op))
      return unary([](APInt a, unsigned w) { return a.zextOrTrunc(w); });
    if (isa<arith::AddIOp>(op))
      return binary([](APInt a, APInt b) { return a + b; });
    if (isa<arith::SubIOp>(op))
      return binary([](APInt a, APInt b) { return a - b; });
    if (isa<arith::MulIOp>(op))
      return binary([](APInt a, APInt b) { return a * b; });
    if (isa<arith::AndIOp>(op))
      return binary([](APInt a, APInt b) { return a & b; });
    if (isa<arith::OrIOp>(op))
      return binary([](APInt a, APInt b) { return a | b; });
    if (isa<arith::XOrIOp>(op))
      return binary([](APInt a, APInt b) { return a ^ b; });
    if (isa<arith::MaxSIOp>(op))
      return binary([](APInt a, APInt b) { return a.sge(b) ? a : b; });
    if (isa<arith::MinSIOp>(op))
      return binary([](APInt a, APInt b) { return a.sle(b) ? a : b; });
    if (isa<arith::DivSIOp, arith::RemSIOp>(op)) {
      FailureOr<APInt> a = operand(0), b = operand(1);
      if (failed(a) || failed(b))
        return failure();
      if (b->isZero()) {
        why = "payload divides by zero";
        return failure();
      }
      env[op->getResult(0)] =
          isa<arith::DivSIOp>(op) ? a->sdiv(*b) : a->srem(*b);
      return success();
    }
    if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      FailureOr<APInt> a = operand(0), b = operand(1);
      if (failed(a) || failed(b))
        return failure();
      bool r = arith::applyCmpPredicate(cmp.getPredicate(), *a, *b);
      env[cmp] = APInt(1, r);
      return success();
    }
    if (auto select = dyn_cast<arith::SelectOp>(op)) {
      FailureOr<APInt> c = operand(0), a = operand(1), b = operand(2);
      if (failed(c) || failed(a) || failed(b))
        return failure();
      env[select] = c->isOne() ? *a : *b;
      return success();
    }
    why = "payload op '" + op->getName().getStringRef().str() +
          "' is not a shape-only integer op";
    return failure();
  }

private:
  ArrayRef<int64_t> point;
};

struct FoldShapeConstantsPass
    : public nova::impl::NovaFoldShapeConstantsBase<FoldShapeConstantsPass> {
  using Base::Base;

  DenseMap<Value, KnownTensor> known;

  /// Evaluates an integer-valued linalg op; all tensor inputs and any init
  /// read by the payload must already be known.
  LogicalResult evaluate(linalg::LinalgOp op, std::string &why) {
    for (Value result : op->getResults())
      if (!cast<RankedTensorType>(result.getType()).hasStaticShape()) {
        why = "dynamic shape";
        return failure();
      }
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic)) {
      why = "dynamic iteration space";
      return failure();
    }
    int64_t points = 1;
    for (int64_t r : ranges)
      points *= r;
    if (points > maxElements) {
      why = "iteration space of " + std::to_string(points) +
            " points exceeds max-elements";
      return failure();
    }
    Block *body = op.getBlock();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    // Operand values: known tensors, or scalars.
    SmallVector<const KnownTensor *> tensors;
    SmallVector<APInt> scalars;
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      bool read = !arg.use_empty();
      const KnownTensor *t = nullptr;
      APInt scalar;
      if (isa<RankedTensorType>(v.getType())) {
        auto it = known.find(v);
        if (it != known.end())
          t = &it->second;
        else if (read) {
          why = "operand #" + std::to_string(operand.getOperandNumber()) +
                " is not a compile-time constant";
          return failure();
        }
      } else if (read) {
        IntegerAttr attr;
        if (!matchPattern(v, m_Constant(&attr))) {
          why = "scalar operand is not a compile-time constant";
          return failure();
        }
        scalar = attr.getValue();
      }
      tensors.push_back(t);
      scalars.push_back(scalar);
    }
    // Outputs start from the init's value (or zero when the payload ignores
    // it) and are updated point by point, which covers reductions too.
    SmallVector<KnownTensor> outs;
    for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
      auto type = cast<RankedTensorType>(init.get().getType());
      const KnownTensor *t = tensors[init.getOperandNumber()];
      outs.push_back(t ? *t
                       : KnownTensor{type, SmallVector<APInt>(
                                               type.getNumElements(),
                                               APInt(bitWidth(type), 0))});
    }
    SmallVector<int64_t> point(ranges.size(), 0);
    for (int64_t p = 0; p < points; ++p) {
      int64_t rest = p;
      for (int64_t d = ranges.size() - 1; d >= 0; --d) {
        point[d] = rest % ranges[d];
        rest /= ranges[d];
      }
      PayloadInterpreter interp(point);
      unsigned numInputs = op.getNumDpsInputs();
      for (OpOperand &operand : op->getOpOperands()) {
        unsigned n = operand.getOperandNumber();
        BlockArgument arg = op.getMatchingBlockArgument(&operand);
        if (arg.use_empty())
          continue;
        if (!isIntegerLike(arg.getType())) {
          why = "payload reads a non-integer operand";
          return failure();
        }
        if (!isa<RankedTensorType>(operand.get().getType())) {
          interp.env[arg] = scalars[n];
          continue;
        }
        SmallVector<int64_t> idx = maps[n].compose(point);
        const KnownTensor &t =
            n < numInputs ? *tensors[n] : outs[n - numInputs];
        interp.env[arg] = t.values[linearize(idx, t.type.getShape())];
      }
      for (Operation &inner : body->without_terminator())
        if (failed(interp.run(&inner, why)))
          return failure();
      Operation *yield = body->getTerminator();
      for (auto [i, yielded] : llvm::enumerate(yield->getOperands())) {
        FailureOr<APInt> v = interp.lookup(yielded, why);
        if (failed(v))
          return failure();
        KnownTensor &out = outs[i];
        SmallVector<int64_t> idx = maps[numInputs + i].compose(point);
        out.values[linearize(idx, out.type.getShape())] = *v;
      }
    }
    for (auto [result, out] : llvm::zip_equal(op->getResults(), outs))
      known[result] = KnownTensor{cast<RankedTensorType>(result.getType()),
                                  std::move(out.values)};
    return success();
  }

  /// Analyses one op producing an integer tensor.
  LogicalResult analyse(Operation *op) {
    if (isa<tensor::EmptyOp>(op))
      return success(); // only a shape; erased once dead
    if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
      auto dense = dyn_cast<DenseIntElementsAttr>(cst.getValue());
      if (!dense)
        return failure();
      known[cst] = KnownTensor{cast<RankedTensorType>(cst.getType()),
                               llvm::to_vector(dense.getValues<APInt>())};
      return success();
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
      auto it = known.find(op->getOperand(0));
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      if (it != known.end() && type.hasStaticShape()) {
        known[op->getResult(0)] = KnownTensor{type, it->second.values};
        return success();
      }
      return failure(); // computed on chip
    }
    std::string why = "not a linalg op";
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      if (succeeded(evaluate(linalgOp, why))) {
        ++numFoldedOps;
        return success();
      }
    return failure(); // depends on the program's inputs: computed on chip
  }

  /// True if a float generic reads the known integer tensor through `use`
  /// in a way the rewrite to an f32 constant supports: as an i1 mask, or an
  /// integer only converted to f32. Other uses keep the integer tensor.
  bool rewritable(OpOperand &use) {
    auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!generic || !generic.isDpsInput(&use) ||
        llvm::any_of(generic->getResultTypes(), isIntegerTensor))
      return false;
    BlockArgument arg = generic.getMatchingBlockArgument(&use);
    if (arg.getType().isInteger(1))
      return true;
    return llvm::all_of(arg.getUsers(), [](Operation *argUser) {
      return isa<arith::SIToFPOp, arith::UIToFPOp>(argUser) &&
             argUser->getResult(0).getType().isF32();
    });
  }

  Value f32Constant(OpBuilder &b, Value v) {
    const KnownTensor &t = known.at(v);
    bool isBool = t.type.getElementType().isInteger(1);
    SmallVector<APFloat> values;
    values.reserve(t.values.size());
    for (const APInt &i : t.values) {
      APFloat f(APFloat::IEEEsingle());
      f.convertFromAPInt(i, /*IsSigned=*/!isBool,
                         APFloat::rmNearestTiesToEven);
      values.push_back(f);
    }
    auto type = RankedTensorType::get(t.type.getShape(), b.getF32Type());
    return arith::ConstantOp::create(b, v.getLoc(),
                                     DenseElementsAttr::get(type, values));
  }

  void rewriteConsumer(OpOperand &use, Value replacement) {
    auto generic = cast<linalg::GenericOp>(use.getOwner());
    BlockArgument arg = generic.getMatchingBlockArgument(&use);
    bool isBool = arg.getType().isInteger(1);
    use.set(replacement);
    OpBuilder b(generic.getContext());
    arg.setType(b.getF32Type());
    if (isBool) {
      b.setInsertionPointToStart(arg.getOwner());
      Value zero = arith::ConstantOp::create(b, arg.getLoc(),
                                             b.getF32FloatAttr(0.0f));
      Value cond = arith::CmpFOp::create(b, arg.getLoc(),
                                         arith::CmpFPredicate::UNE, arg, zero);
      arg.replaceAllUsesExcept(cond, cond.getDefiningOp());
    } else {
      for (Operation *cast : llvm::make_early_inc_range(arg.getUsers())) {
        cast->getResult(0).replaceAllUsesWith(arg);
        cast->erase();
      }
    }
    ++numConvertedConsumers;
  }

  void expandPowi(func::FuncOp func) {
    func.walk([&](math::FPowIOp powi) {
      IntegerAttr exp;
      if (!matchPattern(powi.getRhs(), m_Constant(&exp)))
        return;
      int64_t n = exp.getValue().getSExtValue();
      if (std::abs(n) > 16)
        return;
      OpBuilder b(powi);
      Location loc = powi.getLoc();
      Value base = powi.getLhs();
      Type type = base.getType();
      Value result;
      if (n == 0) {
        result = arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 1.0));
      } else {
        result = base;
        for (int64_t i = 1; i < std::abs(n); ++i)
          result = arith::MulFOp::create(b, loc, result, base);
        if (n < 0) {
          Value one =
              arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 1.0));
          result = arith::DivFOp::create(b, loc, one, result);
        }
      }
      powi.replaceAllUsesWith(result);
      powi.erase();
      ++numExpandedPowi;
    });
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    known.clear();

    // 1. Analyse: evaluate every op producing an integer tensor.
    SmallVector<Operation *> folded;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!llvm::any_of(op->getResultTypes(), isIntegerTensor))
        return WalkResult::advance();
      if (succeeded(analyse(op)))
        folded.push_back(op);
      return WalkResult::skip();
    });

    // 2. Rewrite: float generics read f32 constants.
    DenseMap<Value, Value> replacements;
    for (Operation *op : folded)
      for (Value result : op->getResults()) {
        if (!known.count(result))
          continue;
        for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
          if (!rewritable(use))
            continue;
          Value &repl = replacements[result];
          if (!repl) {
            OpBuilder b(op);
            b.setInsertionPointAfter(op);
            repl = f32Constant(b, result);
          }
          rewriteConsumer(use, repl);
        }
      }
    // Folded ops are now dead; erase them, users first.
    for (Operation *op : llvm::reverse(folded))
      if (op->use_empty())
        op->erase();

    expandPowi(func);
  }
};

} // namespace
