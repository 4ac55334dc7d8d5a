//===- DecomposeConv.cpp - conv_2d_nchw_fchw -> matmuls over views -*- C++ -*-===//
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "nova-decompose-conv"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVADECOMPOSECONV
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// What one kernel tap does to the image's accumulator.
enum class Tap {
  Matmul,    // += W[:, :, kh, kw] (F x C) * view (C x OH*OW)
  Depthwise, // += W[:, kh, kw] (C, broadcast) * view, elementwise
  PoolSum,   // += view
  PoolMax,   // = max(acc, view)
};

struct DecomposeConvPass
    : public nova::impl::NovaDecomposeConvBase<DecomposeConvPass> {
  using Base::Base;

  /// The static strides/dilations and a shape check shared by the forms.
  static LogicalResult checkShapes(Operation *conv, ArrayRef<Value> operands) {
    Type element;
    for (Value v : operands) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || !type.hasStaticShape())
        return conv->emitError()
               << "nova-decompose-conv needs static tensor shapes";
      if (element && type.getElementType() != element)
        return conv->emitError()
               << "nova-decompose-conv needs one element type for input, "
                  "filter and output";
      element = type.getElementType();
    }
    return success();
  }

  static SmallVector<int64_t> values(DenseIntElementsAttr attr) {
    return llvm::to_vector(llvm::map_range(attr.getValues<int64_t>(),
                                           [](int64_t v) { return v; }));
  }

  /// A full-rank slice of `src` collapsed by `groups`: unit dims go away in
  /// an explicit reshape rather than a rank-reducing slice, whose dropped
  /// dims are ambiguous when other dims are 1 too (MLIR 22's slice/cast
  /// folds then pick the wrong ones and produce out-of-bounds slices).
  static Value sliceCollapsed(IRRewriter &rewriter, Location loc, Value src,
                              ArrayRef<OpFoldResult> offsets,
                              ArrayRef<OpFoldResult> sizes,
                              ArrayRef<OpFoldResult> strides,
                              ArrayRef<ReassociationIndices> groups) {
    auto type = cast<RankedTensorType>(src.getType());
    SmallVector<int64_t> shape;
    for (OpFoldResult size : sizes)
      shape.push_back(*getConstantIntValue(size));
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, loc, RankedTensorType::get(shape, type.getElementType()), src,
        offsets, sizes, strides);
    return tensor::CollapseShapeOp::create(rewriter, loc, slice, groups);
  }

  /// The inverse: `v` expanded by `groups` to `sizes` and inserted.
  static Value insertExpanded(IRRewriter &rewriter, Location loc, Value v,
                              Value dest, ArrayRef<OpFoldResult> offsets,
                              ArrayRef<OpFoldResult> sizes,
                              ArrayRef<ReassociationIndices> groups) {
    auto type = cast<RankedTensorType>(dest.getType());
    SmallVector<int64_t> shape;
    for (OpFoldResult size : sizes)
      shape.push_back(*getConstantIntValue(size));
    Value expanded = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(shape, type.getElementType()), v,
        groups);
    SmallVector<OpFoldResult> ones(sizes.size(), rewriter.getIndexAttr(1));
    return tensor::InsertSliceOp::create(rewriter, loc, expanded, dest,
                                         offsets, sizes, ones);
  }

  /// One elementwise tap on the vector unit: acc + tap[c] * x, acc + x or
  /// max(acc, x) over [C, P] (`tap` is null when pooling).
  static Value elementwiseTap(IRRewriter &rewriter, Location loc, Tap kind,
                              Value tap, Value x, Value acc) {
    MLIRContext *ctx = rewriter.getContext();
    AffineMap id = AffineMap::getMultiDimIdentityMap(2, ctx);
    AffineMap channel = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
    SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
    SmallVector<Value> ins = {x};
    SmallVector<AffineMap> maps = {id, id};
    if (tap) {
      ins.insert(ins.begin(), tap);
      maps.insert(maps.begin(), channel);
    }
    return linalg::GenericOp::create(
               rewriter, loc, TypeRange{acc.getType()}, ins, ValueRange{acc},
               maps, parallel,
               [kind](OpBuilder &b, Location l, ValueRange args) {
                 Value in = args[args.size() - 2], out = args.back(), r;
                 bool isFloat = isa<FloatType>(out.getType());
                 if (kind == Tap::Depthwise)
                   in = isFloat ? arith::MulFOp::create(b, l, args[0], in).getResult()
                                : arith::MulIOp::create(b, l, args[0], in).getResult();
                 if (kind == Tap::PoolMax)
                   r = isFloat ? arith::MaximumFOp::create(b, l, out, in).getResult()
                               : arith::MaxSIOp::create(b, l, out, in).getResult();
                 else
                   r = isFloat ? arith::AddFOp::create(b, l, out, in).getResult()
                               : arith::AddIOp::create(b, l, out, in).getResult();
                 linalg::YieldOp::create(b, l, ValueRange{r});
               })
        .getResult(0);
  }

  /// acc (F x P) + tap (F x C) * x (C x P) for integers, which the matrix
  /// unit does not take: the products [F, C, P] on the vector unit, then a
  /// sum over C into acc (the form torch gives an integer mm).
  static Value integerMatmulTap(IRRewriter &rewriter, Location loc, Value tap,
                                Value x, Value acc) {
    MLIRContext *ctx = rewriter.getContext();
    auto accType = cast<RankedTensorType>(acc.getType());
    int64_t f = accType.getDimSize(0), p = accType.getDimSize(1),
            c = cast<RankedTensorType>(tap.getType()).getDimSize(1);
    Type element = accType.getElementType();
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx);
    // Loops (f, c, p).
    AffineMap fc = AffineMap::get(3, 0, {d0, d1}, ctx),
              cp = AffineMap::get(3, 0, {d1, d2}, ctx),
              fp = AffineMap::get(3, 0, {d0, d2}, ctx),
              all = AffineMap::getMultiDimIdentityMap(3, ctx);
    Value empty = tensor::EmptyOp::create(rewriter, loc, {f, c, p}, element);
    Value products =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{empty.getType()}, ValueRange{tap, x},
            ValueRange{empty}, ArrayRef<AffineMap>{fc, cp, all},
            SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l, Value(arith::MulIOp::create(b, l, args[0], args[1])));
            })
            .getResult(0);
    return linalg::GenericOp::create(
               rewriter, loc, TypeRange{accType}, ValueRange{products},
               ValueRange{acc}, ArrayRef<AffineMap>{all, fp},
               SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                                utils::IteratorType::reduction,
                                                utils::IteratorType::parallel},
               [](OpBuilder &b, Location l, ValueRange args) {
                 linalg::YieldOp::create(
                     b, l, Value(arith::AddIOp::create(b, l, args[0], args[1])));
               })
        .getResult(0);
  }

  /// out[n] (F x OH*OW) += W[:, :, kh, kw] * X[n, :, kh*d : +s, kw*d : +s]
  /// over loops n, kh, kw, at the rewriter's insertion point; `x` is
  /// [N, C, H, W], `w` [F, C, KH, KW], `out` [N, F, OH, OW]. Depthwise, `w`
  /// is [C, KH, KW] and each tap scales its channel's view elementwise;
  /// pooling, `w` is the [KH, KW] window (its values unused) and each tap
  /// adds its view or takes the maximum with it.
  Value emitLoops(IRRewriter &rewriter, Location loc, Value x, Value w,
                  Value out, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> dilations, Tap kind = Tap::Matmul) {
    bool depthwise = kind == Tap::Depthwise;
    bool pooling = kind == Tap::PoolSum || kind == Tap::PoolMax;
    auto filter = cast<RankedTensorType>(w.getType());
    auto output = cast<RankedTensorType>(out.getType());
    Type element = output.getElementType();
    int64_t n = output.getDimSize(0), f = output.getDimSize(1),
            oh = output.getDimSize(2), ow = output.getDimSize(3);
    // The filter's first kernel dimension.
    unsigned k0 = pooling ? 0 : depthwise ? 1 : 2;
    int64_t c = kind == Tap::Matmul ? filter.getDimSize(1) : f,
            kh = filter.getDimSize(k0), kw = filter.getDimSize(k0 + 1);

    // Loops over images and kernel taps rather than one matmul per (image,
    // tap) pair: the program stays proportional to the input (a weight
    // gradient's "kernel" is the output gradient, H x W taps), and so does
    // the compile time of everything downstream (one-shot bufferization is
    // quadratic in the number of aliasing slices).
    llvm::SmallDenseMap<int64_t, Value> constants;
    auto index = [&](int64_t v) -> Value {
      Value &c = constants[v];
      if (!c)
        c = arith::ConstantIndexOp::create(rewriter, loc, v);
      return c;
    };
    auto attr = [&](int64_t v) -> OpFoldResult {
      return rewriter.getIndexAttr(v);
    };
    // Loop bounds and dilations, made once in front of the loops.
    Value zero = index(0), one = index(1), images = index(n),
          rows = index(kh), cols = index(kw);
    Value dilation[2] = {dilations[0] == 1 ? Value() : index(dilations[0]),
                         dilations[1] == 1 ? Value() : index(dilations[1])};
    // The tap's offset along spatial dim `d`: `iv * dilation` (or `iv`).
    auto scaled = [&](Value iv, int d) -> OpFoldResult {
      if (!dilation[d])
        return iv;
      return arith::MulIOp::create(rewriter, loc, iv, dilation[d]).getResult();
    };
    auto accType = RankedTensorType::get({f, oh * ow}, element);
    // [1, X, OH, OW] <-> [X, OH*OW]; a tap [F, C, 1, 1] -> [F, C] or
    // [C, 1, 1] -> [C].
    SmallVector<ReassociationIndices> image = {{0, 1}, {2, 3}};
    SmallVector<ReassociationIndices> tapGroups =
        depthwise ? SmallVector<ReassociationIndices>{{0, 1, 2}}
                  : SmallVector<ReassociationIndices>{{0}, {1, 2, 3}};
    SmallVector<OpFoldResult> ones(4, attr(1));

    auto imageLoop = scf::ForOp::create(
        rewriter, loc, zero, images, one,
        ValueRange{out},
        [&](OpBuilder &, Location, Value b, ValueRange imageArgs) {
          SmallVector<OpFoldResult> outOffsets = {b, attr(0), attr(0),
                                                  attr(0)};
          SmallVector<OpFoldResult> outSizes = {attr(1), attr(f), attr(oh),
                                                attr(ow)};
          Value acc = sliceCollapsed(rewriter, loc, imageArgs[0], outOffsets,
                                     outSizes, ones, image);
          auto rowLoop = scf::ForOp::create(
              rewriter, loc, zero, rows, one, ValueRange{acc},
              [&](OpBuilder &, Location, Value i, ValueRange rowArgs) {
                auto colLoop = scf::ForOp::create(
                    rewriter, loc, zero, cols, one, ValueRange{rowArgs[0]},
                    [&](OpBuilder &, Location, Value j, ValueRange colArgs) {
                      Value tap;
                      if (!pooling) {
                        SmallVector<OpFoldResult> tapOffsets = {i, j},
                                                  tapSizes = {attr(1), attr(1)};
                        tapOffsets.insert(tapOffsets.begin(), k0, attr(0));
                        if (!depthwise)
                          tapSizes.insert(tapSizes.begin(), attr(f));
                        tapSizes.insert(tapSizes.begin() + (depthwise ? 0 : 1),
                                        attr(c));
                        tap = sliceCollapsed(
                            rewriter, loc, w, tapOffsets, tapSizes,
                            SmallVector<OpFoldResult>(tapSizes.size(), attr(1)),
                            tapGroups);
                      }
                      Value xm = sliceCollapsed(
                          rewriter, loc, x,
                          ArrayRef<OpFoldResult>{b, attr(0),
                                                 scaled(i, 0), scaled(j, 1)},
                          ArrayRef<OpFoldResult>{attr(1), attr(c), attr(oh),
                                                 attr(ow)},
                          // A stride over one output row/column is
                          // meaningless; 1 keeps the later rank-reducing
                          // subview's layout unambiguous for upstream folds.
                          ArrayRef<OpFoldResult>{attr(1), attr(1),
                                                 attr(oh == 1 ? 1 : strides[0]),
                                                 attr(ow == 1 ? 1 : strides[1])},
                          image);
                      Value mm;
                      if (kind != Tap::Matmul)
                        mm = elementwiseTap(rewriter, loc, kind, tap, xm,
                                            colArgs[0]);
                      else if (!isa<FloatType>(element))
                        mm = integerMatmulTap(rewriter, loc, tap, xm, colArgs[0]);
                      else
                        mm = linalg::MatmulOp::create(
                                 rewriter, loc, TypeRange{accType},
                                 ValueRange{tap, xm}, ValueRange{colArgs[0]})
                                 .getResult(0);
                      scf::YieldOp::create(rewriter, loc, mm);
                    });
                scf::YieldOp::create(rewriter, loc, colLoop.getResult(0));
              });
          Value written =
              insertExpanded(rewriter, loc, rowLoop.getResult(0), imageArgs[0],
                             outOffsets, outSizes, image);
          scf::YieldOp::create(rewriter, loc, written);
        });
    numMatmuls += n * kh * kw;
    return imageLoop.getResult(0);
  }

  LogicalResult decompose(linalg::Conv2DNchwFchwOp conv) {
    Value x = conv.getInputs()[0], w = conv.getInputs()[1],
          out = conv.getOutputs()[0];
    if (failed(checkShapes(conv, {x, w, out})))
      return failure();
    IRRewriter rewriter(conv);
    Value result = emitLoops(rewriter, conv.getLoc(), x, w, out,
                             values(conv.getStrides()),
                             values(conv.getDilations()));
    rewriter.replaceOp(conv, result);
    ++numDecomposed;
    return success();
  }

  LogicalResult decompose(linalg::DepthwiseConv2DNchwChwOp conv) {
    Value x = conv.getInputs()[0], w = conv.getInputs()[1],
          out = conv.getOutputs()[0];
    if (failed(checkShapes(conv, {x, w, out})))
      return failure();
    IRRewriter rewriter(conv);
    Value result = emitLoops(rewriter, conv.getLoc(), x, w, out,
                             values(conv.getStrides()),
                             values(conv.getDilations()), Tap::Depthwise);
    rewriter.replaceOp(conv, result);
    ++numDecomposed;
    return success();
  }

  /// linalg.pooling_nchw_sum / _max (torch's avg_pool2d before its divide,
  /// max_pool2d on the -inf padded input).
  template <typename PoolOp>
  LogicalResult decomposePool(PoolOp pool, Tap kind) {
    Value x = pool.getInputs()[0], window = pool.getInputs()[1],
          out = pool.getOutputs()[0];
    if (failed(checkShapes(pool, {x, out})) ||
        !cast<ShapedType>(window.getType()).hasStaticShape())
      return pool.emitError() << "nova-decompose-conv needs static tensor shapes";
    IRRewriter rewriter(pool);
    Value result = emitLoops(rewriter, pool.getLoc(), x, window, out,
                             values(pool.getStrides()),
                             values(pool.getDilations()), kind);
    rewriter.replaceOp(pool, result);
    ++numDecomposed;
    return success();
  }

  /// Grouped: a loop over groups g around the ungrouped loops on
  /// X[:, g] [N, C, H, W], W[g] [F, C, KH, KW] and out[:, g] [N, F, OH, OW].
  /// torch-mlir emits this form for grouped and depthwise convolutions and
  /// for the weight gradient of a strided one (the batch as the groups).
  LogicalResult decompose(linalg::Conv2DNgchwGfchwOp conv) {
    Value x = conv.getInputs()[0], w = conv.getInputs()[1],
          out = conv.getOutputs()[0];
    if (failed(checkShapes(conv, {x, w, out})))
      return failure();
    auto xt = cast<RankedTensorType>(x.getType());
    auto wt = cast<RankedTensorType>(w.getType());
    auto ot = cast<RankedTensorType>(out.getType());
    int64_t groups = xt.getDimSize(1);
    IRRewriter rewriter(conv);
    Location loc = conv.getLoc();
    auto attr = [&](int64_t v) -> OpFoldResult {
      return rewriter.getIndexAttr(v);
    };
    // The slice of `v` at group `g` along dim `d` (the group dim merged
    // into its neighbour by `merge` afterwards), and back.
    auto sizesAt = [&](RankedTensorType t, unsigned d) {
      SmallVector<OpFoldResult> sizes;
      for (auto [i, s] : llvm::enumerate(t.getShape()))
        sizes.push_back(attr(i == d ? 1 : s));
      return sizes;
    };
    auto offsetsAt = [&](RankedTensorType t, unsigned d, Value g) {
      SmallVector<OpFoldResult> offsets(t.getRank(), attr(0));
      offsets[d] = g;
      return offsets;
    };
    SmallVector<OpFoldResult> ones(5, attr(1));
    SmallVector<int64_t> strides = values(conv.getStrides()),
                         dilations = values(conv.getDilations());
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value count = arith::ConstantIndexOp::create(rewriter, loc, groups);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, count, one, ValueRange{out},
        [&](OpBuilder &, Location, Value g, ValueRange args) {
          // X and out [N, G, ...] lose dim 1, W [G, F, ...] dim 0.
          SmallVector<ReassociationIndices> dim1 = {{0}, {1, 2}, {3}, {4}},
                                            dim0 = {{0, 1}, {2}, {3}, {4}};
          Value xs = sliceCollapsed(rewriter, loc, x, offsetsAt(xt, 1, g),
                                    sizesAt(xt, 1), ones, dim1);
          Value ws = sliceCollapsed(rewriter, loc, w, offsetsAt(wt, 0, g),
                                    sizesAt(wt, 0), ones, dim0);
          Value os = sliceCollapsed(rewriter, loc, args[0], offsetsAt(ot, 1, g),
                                    sizesAt(ot, 1), ones, dim1);
          Value r = emitLoops(rewriter, loc, xs, ws, os, strides, dilations);
          Value written = insertExpanded(rewriter, loc, r, args[0],
                                         offsetsAt(ot, 1, g), sizesAt(ot, 1),
                                         dim1);
          scf::YieldOp::create(rewriter, loc, written);
        });
    rewriter.replaceOp(conv, loop.getResult(0));
    ++numDecomposed;
    return success();
  }

  void runOnOperation() override {
    SmallVector<Operation *> convs;
    getOperation().walk([&](Operation *op) {
      if (isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNgchwGfchwOp,
              linalg::DepthwiseConv2DNchwChwOp, linalg::PoolingNchwSumOp,
              linalg::PoolingNchwMaxOp>(op))
        convs.push_back(op);
    });
    for (Operation *op : convs) {
      LogicalResult r = failure();
      if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op))
        r = decompose(conv);
      else if (auto grouped = dyn_cast<linalg::Conv2DNgchwGfchwOp>(op))
        r = decompose(grouped);
      else if (auto depthwise = dyn_cast<linalg::DepthwiseConv2DNchwChwOp>(op))
        r = decompose(depthwise);
      else if (auto sum = dyn_cast<linalg::PoolingNchwSumOp>(op))
        r = decomposePool(sum, Tap::PoolSum);
      else
        r = decomposePool(cast<linalg::PoolingNchwMaxOp>(op), Tap::PoolMax);
      if (failed(r))
        return signalPassFailure();
    }
  }
};

} // namespace
